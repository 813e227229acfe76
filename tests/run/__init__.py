"""Running a scenario (mgtui/run): the runner's child process, how a run starts and ends, what a scenario may do to it."""
