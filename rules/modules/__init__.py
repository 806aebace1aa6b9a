"""TL1: module definition and parameter registration."""
