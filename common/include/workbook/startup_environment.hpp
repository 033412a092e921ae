/// \file
/// The workbook's settings, the `WORKBOOK_*` environment variables, as they were when the
/// program started. `./grade` sets them for each grader program (the copy bandwidth it measured,
/// `--sanitize`, the report file); the code being graded runs in the same process and could
/// change the environment with `setenv`, so the settings are read once, before any of that code
/// runs, and never again. A program run by hand reads the same variables at the same moment.
/// This guards against a `setenv`, not against code that goes after the process's memory.
#pragma once

namespace workbook {

/// The value the `WORKBOOK_*` variable \p name had when the program started, or nullptr when it
/// was not set. Other names are not kept: nullptr.
const char* startup_env(const char* name);

/// True when the program started with `WORKBOOK_SANITIZE` set, neither empty nor starting with "0"
/// (`./grade --sanitize`):
/// no guard regions, small sizes.
bool sanitizer_run();

}  // namespace workbook
