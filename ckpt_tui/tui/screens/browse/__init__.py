"""The browse screen's parts: its snapshot feed, its changes, its panes, its own widgets and the
protocols through which they reach the screen (never by its class)."""
