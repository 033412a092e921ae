"""The grader driver: builds the graded tree, runs each lesson's tests in one process (and any
task that did not pass there in one of its own), scores the results and writes the scoreboard,
results.json (Gradescope) and JUnit XML.

Entry point: ./grade at the top of the repository (cli.main)."""
