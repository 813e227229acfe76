"""The bundled scenarios: lecture scripts that mgtui can open by name."""
