"""TL7: deprecated APIs and their replacements."""
