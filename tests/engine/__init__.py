"""The engine (lesson material): every op against finite differences and PyPI micrograd, and the bundled scenarios as plain scripts."""
