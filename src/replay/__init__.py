"""Replay: the read models as they stood at an instant, folded again from the log.

``world.py`` folds fresh projections up to a seq in a scratch folder of the data dir;
``believed.py`` reads what was believed from them; ``fidelity.py`` re-derives recorded traces
and compares; ``diff.py`` lists what changed between two instants; ``snapshots.py`` keeps
copies of the memories projection so a replay starts near its instant.
"""
