"""Trust enforced, quarantine and rollback."""
