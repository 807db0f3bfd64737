"""Presentation: layout (pure tables) and renderers (console; HTML and exports later)."""
