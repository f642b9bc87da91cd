"""A chain's life after its writes: edit, forget, restore, split, erase, re-key, re-embed."""
