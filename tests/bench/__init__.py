"""Every benchmark in bench/ still runs, in its quick mode."""
