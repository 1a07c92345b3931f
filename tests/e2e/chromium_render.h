// Headless Chromium (Debian's chromium, installed by scripts/setup.sh) rendering
// a page the runtime wrote, for the report tests: did it load without a console
// message, and is its screenshot more than an empty page's.
#pragma once

#include <string>

#include "tests/e2e/e2e_util.h"

namespace pypto::e2e {

inline const fs::path kChromium = "/usr/bin/chromium";

// Headless Chromium's screenshot of `page`; the browser's output (console
// messages of the page appear as ":CONSOLE" lines).
struct Rendering {
  int exit_code = -1;
  std::string log;
  uintmax_t png_bytes = 0;
};
// The screenshot stays as <build>/screenshots/<name>.png (docs/dfx.md shows them).
inline Rendering render(const fs::path& page, const std::string& name) {
  const fs::path dir = scratch_dir("chromium_" + name);
  const fs::path png = dir / "page.png";
  SubprocessOptions options;
  options.timeout = std::chrono::seconds(120);
  // HOME and the profile inside the scratch directory: nothing outlives the test.
  options.extra_env = {"HOME=" + dir.string()};
  const SubprocessResult r = run_subprocess(
      {kChromium.string(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
       "--user-data-dir=" + (dir / "profile").string(), "--enable-logging=stderr", "--v=0",
       "--window-size=1200,1400", "--screenshot=" + png.string(), "file://" + page.string()},
      options);
  Rendering result;
  result.exit_code = r.timed_out ? -1 : r.exit_code;
  result.log = r.output;
  std::error_code ec;
  result.png_bytes = fs::file_size(png, ec);
  if (ec) result.png_bytes = 0;
  if (result.png_bytes) {
    fs::create_directories(PYPTO_SCREENSHOT_DIR, ec);
    fs::copy_file(png, fs::path(PYPTO_SCREENSHOT_DIR) / (name + ".png"),
                  fs::copy_options::overwrite_existing, ec);
  }
  fs::remove_all(dir);
  return result;
}

}  // namespace pypto::e2e
