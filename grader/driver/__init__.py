"""The grader driver: builds the graded tree, runs each task in its own process, scores
the results and writes the scoreboard, results.json (Gradescope) and JUnit XML.

Entry point: ./grade at the top of the repository (cli.main)."""
