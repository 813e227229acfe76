"""The debugger's widgets: node table, topo list, step detail, source, pass bar, header,
and the screens and dialogs built from them."""
