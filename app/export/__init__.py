"""Offline exports (issue #5): a self-contained HTML handbook and an Obsidian vault kept in sync."""
