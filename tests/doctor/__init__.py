"""The gradient doctor (mgtui/doctor): planted bugs found at their node and line, correct engines left clean, the corpus of real shapes."""
