"""The `mdad` command line: thin wrappers that parse, call the library and render."""
