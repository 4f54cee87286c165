"""Changes over checkpoints, free of Textual: one change split by the backend that owns each
checkpoint (`owners`), run through each backend's client (`bulk_action`, `fleet_action`), its
progress and summary wording, and the session's log of what was done (`session_log`). The TUI
and `ckpt-tui prune` both carry out their changes here."""
