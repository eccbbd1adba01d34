"""Profile fitting: a simulator profile estimated from a real trace set, written documented, and checked
by simulating it on the same tasks (``traces fit``)."""
