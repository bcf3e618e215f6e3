"""Type stubs for the Rust extension module ``agui_fast._native``."""

__version__: str
