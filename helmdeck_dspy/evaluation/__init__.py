"""Replay evaluation of trace sets: parse success, finish_reason rates, failure causes, plan quality."""
