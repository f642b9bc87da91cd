"""The ``bellamente-export`` document: its format and checks, the export of a store into it,
and the import that restores one into fresh chains and documents."""
