"""The view state, free of widgets: what the tables show and how (rows, sorting, grouping,
status texts, cells, sparklines)."""
