"""The `rescue-sim` command line: one small module per command, each a thin layer over library functions."""
