"""The headless session (mgtui/session): navigation, the timeline, quiz rules, following a teacher."""
