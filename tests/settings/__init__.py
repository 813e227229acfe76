"""What a user sets (mgtui/settings): the keys table and the user's keymap."""
