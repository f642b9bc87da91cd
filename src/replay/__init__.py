"""Replay: the read models as they stood at an instant, folded again from the log.

The folding itself is the domain's (``memory/world.py``: fresh projections up to a seq in a
scratch folder of the data dir; snapshots are a projection, ``projections/memories/snapshots.py``).
Here: ``believed.py`` reads what was believed from them; ``fidelity.py`` re-derives recorded
traces and compares; ``diff.py`` lists what changed between two instants; ``command.py`` is
the ``mnemolog replay`` command over them.
"""
