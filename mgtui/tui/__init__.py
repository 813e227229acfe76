"""Presentation: the Textual app (`app`, `app_loading`, `widgets/`), the terminal report
of `--print` and `--check` (`report`), what the app writes to the terminal
(`screen_diff`), the graph's painter (`graph_paint`) and the exports that replay a
lesson elsewhere (`export_html`, `export_cast`)."""
