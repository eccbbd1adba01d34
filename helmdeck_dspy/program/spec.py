"""What one plan call sends the model: :class:`PromptSpec`.

A spec is built once per request (``planning.request.resolve_request``, through the answer
strategy's :meth:`~helmdeck_dspy.program.strategies.base.AnswerStrategy.spec`), frozen, and handed
to the plan module through ``dspy.context`` under :data:`SPEC_KEY`, never stored on the module, so
concurrent requests over one loaded program cannot see each other's catalogs. The adapter renders
exactly what the spec says, through its strategy; the recorded run stamps its :meth:`PromptSpec.stamp`.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from pydantic import BaseModel, ConfigDict

from helmdeck_dspy.domain import Variant
from helmdeck_dspy.program.answer_schema import SchemaWire
from helmdeck_dspy.program.demo_pool import PoolDemo

SPEC_KEY = "helmdeck_prompt_spec"
"""The ``dspy.context`` key a plan call's :class:`PromptSpec` travels under."""


class PromptSpec(BaseModel):
    """Everything one plan request shows and asks of the model (see the module docstring).

    Attributes:
        variant: ``full_steps`` or ``single_pick``.
        strategy: The answer strategy's name (``program.strategies``).
        instructions: The instruction text (None: the program's own).
        catalog: The selected catalog's text, as the prompt carries it.
        catalog_in_system: The catalog goes in the system message (prefix-caching models).
        max_tokens: The output cap.
        temperature / seed: The sampling sent with the call, any the LM was built with included
            (None: none sent).
        json_object: Ask for a JSON-object response format.
        answer_schema: The JSON Schema the answer is decoded under (the ``schema`` strategy).
        schema_wire: How the schema travels (see :data:`~helmdeck_dspy.program.answer_schema.SchemaWire`).
        demo_tools: A program demo is shown only when every tool it names is among these.
        pool_demos: Demos chosen for this request from the program's compiled pool.
        first_answer / again_ask: An ask again in the same conversation: the first answer (the
            assistant turn) and the user turn after it (None on a first call; ``planning.decision``).
    """

    model_config = ConfigDict(frozen=True)

    variant: Variant = "full_steps"
    strategy: str = "free"
    instructions: str | None = None
    catalog: str = ""
    catalog_in_system: bool = False
    max_tokens: int | None = None
    temperature: float | None = None
    seed: int | None = None
    json_object: bool = False
    answer_schema: dict[str, Any] | None = None
    schema_wire: SchemaWire = "json_schema"
    demo_tools: frozenset[str] | None = None
    pool_demos: tuple[PoolDemo, ...] = ()
    first_answer: str | None = None
    again_ask: str | None = None

    def stamp(self) -> dict[str, Any]:
        """What a trace record keeps of the spec: the strategy, the wire, the demos and a hash of the rest."""
        body = self.model_dump(mode="json", exclude={"pool_demos"})
        for key in ("first_answer", "again_ask"):  # fields added since specs were first hashed: unset, the hash is unchanged
            if body[key] is None:
                del body[key]
        body["demo_tools"] = sorted(self.demo_tools) if self.demo_tools is not None else None
        digest = hashlib.sha256(json.dumps(body, sort_keys=True, ensure_ascii=False).encode()).hexdigest()[:16]
        return {"strategy": self.strategy, **({"wire": self.schema_wire} if self.answer_schema is not None else {}),
                "spec_sha": digest}
