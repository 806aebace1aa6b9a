"""TL3: devices and data movement."""
