"""Lesson sessions over SSH (and in a browser): one debugger app per connection, every
session replaying the lessons recorded once, students following the teacher's step."""
