"""The graph picture, headless: a forward pass's graph (or one node's neighbourhood) laid
out once as box-drawing text. `placement` ranks and orders the layers, `routes` gives each
edge its track in the channels between layers, `layout` places the boxes and their labels.
The Graph pane, `--export svg` and the html export paint over it (`mgtui/tui/graph_paint.py`).
"""
