"""The app (mgtui/tui), driven with Pilot and compared with snapshots."""
