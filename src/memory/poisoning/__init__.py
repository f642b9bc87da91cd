"""The poisoning detector: its rules, the learned head and its fit."""
