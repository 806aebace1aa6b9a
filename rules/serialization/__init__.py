"""TL6: serialization and security."""
