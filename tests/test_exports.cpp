// tests/test_exports.cpp: output files are written whole or not at all (tensor/file_output.h):
// links planted in the folder are never followed, devices, FIFOs and folders are never replaced,
// a full disk is an error that leaves the old file as it was, and a trace is valid UTF-8 whatever
// bytes its names hold.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "profiler/chrome_trace.h"
#include "profiler/profiler.h"
#include "tensor/error.h"
#include "tensor/file_output.h"
#include "tests/support/error_text.h"
#include "tests/support/run_command.h"
#include "tests/support/scratch_dir.h"
#include "tests/support/synthetic_events.h"

namespace prof = ts::profiler;
namespace fs = std::filesystem;
using ts::testing::contains;
using ts::testing::error_of;
using ts::testing::SyntheticEvents;

namespace {

// A fresh, empty folder of this process's scratch directory.
fs::path fresh_dir(const std::string& name) {
  static const ts::testing::ScratchDir dir("ts_exports_tests");
  const fs::path p = dir.path() / name;
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_text(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

std::string gunzip(const fs::path& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  REQUIRE(f != nullptr);
  std::string text;
  char chunk[1 << 15];
  int n = 0;
  while ((n = gzread(f, chunk, sizeof chunk)) > 0) text.append(chunk, static_cast<size_t>(n));
  gzclose(f);
  return text;
}

// The names in a folder, sorted: what an export left there.
std::vector<std::string> names_in(const fs::path& dir) {
  std::vector<std::string> names;
  for (const fs::directory_entry& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

// A small trace to export.
prof::Recording small_recording() {
  SyntheticEvents s;
  s.step("ProfilerStep#2", 1000, 61000, -1);
  s.op("ts::add", 2000, 3500, 0);
  return s.rec;
}

// A 64 KiB tmpfs on a fresh folder, for a full disk: fill() takes every block, after which a
// write there fails with ENOSPC. Only a process that may mount (root, CAP_SYS_ADMIN) gets one;
// otherwise `why` says why not.
struct SmallTmpfs {
  fs::path dir;
  bool mounted = false;
  std::string why;
  explicit SmallTmpfs(const std::string& name) : dir(fresh_dir(name)) {
    mounted = ::mount("tmpfs", dir.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, "size=64k,mode=0755") == 0;
    if (!mounted) why = std::strerror(errno);
  }
  ~SmallTmpfs() {
    if (mounted) ::umount2(dir.c_str(), MNT_DETACH);
  }
  void fill() {
    const int fd = ::open((dir / "filler").c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    REQUIRE(fd >= 0);
    const std::string block(4096, 'x');
    while (::write(fd, block.data(), block.size()) > 0) {
    }
    const std::string byte(1, 'x');
    while (::write(fd, byte.data(), 1) > 0) {  // the last partial block
    }
    ::close(fd);
  }
};

}  // namespace

TEST_CASE("exports: a link planted at the old temporary name, or any other, is never followed") {
  const fs::path dir = fresh_dir("planted");
  const fs::path elsewhere = fresh_dir("planted_victims");
  const fs::path victim = elsewhere / "victim.txt";
  write_text(victim, "the victim's own bytes\n");
  const prof::Recording rec = small_recording();
  for (const char* name : {"trace.json", "trace.json.gz"}) {
    INFO(name);
    const fs::path path = dir / name;
    // The names an attacker can guess: the old "<path>.tmp" and ones like it.
    for (const std::string& planted : {path.string() + ".tmp", (dir / fmt::format(".{}.tmp", name)).string(),
                                       (dir / fmt::format(".{}.XXXXXX", name)).string()})
      fs::create_symlink(victim, planted);
    prof::export_chrome_trace(rec, path.string());
    prof::export_chrome_trace(rec, path.string());  // and again, over the first one
    CHECK(read_text(victim) == "the victim's own bytes\n");
    CHECK(fs::is_regular_file(fs::symlink_status(path)));
    const std::string text = fs::path(name).extension() == ".gz" ? gunzip(path) : read_text(path);
    CHECK(text == prof::chrome_trace_json(rec, path.string()));
  }
  // Only the traces and the planted links: no temporary file left behind.
  CHECK(names_in(dir) == std::vector<std::string>{".trace.json.XXXXXX", ".trace.json.gz.XXXXXX", ".trace.json.gz.tmp",
                                                  ".trace.json.tmp", "trace.json", "trace.json.gz",
                                                  "trace.json.gz.tmp", "trace.json.tmp"});
  for (const char* link : {"trace.json.tmp", ".trace.json.gz.XXXXXX"})
    CHECK(fs::read_symlink(dir / link) == victim);
  CHECK(names_in(elsewhere) == std::vector<std::string>{"victim.txt"});
}

TEST_CASE("exports: a FIFO, a folder or a device at the path is refused and left as it was") {
  const fs::path dir = fresh_dir("not_regular");
  const prof::Recording rec = small_recording();
  const fs::path fifo = dir / "fifo.json";
  REQUIRE(::mkfifo(fifo.c_str(), 0644) == 0);
  const fs::path folder = dir / "folder.json";
  fs::create_directories(folder);
  write_text(folder / "inside.txt", "kept\n");

  std::string e = error_of([&] { prof::export_chrome_trace(rec, fifo.string()); });
  CHECK(contains(e, "export_chrome_trace: cannot write " + fifo.string() + ": it is a FIFO (named pipe), not a "
                    "regular file (refusing to replace it)"));
  CHECK(fs::is_fifo(fs::symlink_status(fifo)));
  e = error_of([&] { prof::export_chrome_trace(rec, folder.string() + ".gz"); });  // nothing there: fine
  CHECK(e.empty());
  e = error_of([&] { prof::export_chrome_trace(rec, folder.string()); });
  CHECK(contains(e, "cannot write " + folder.string() + ": it is a directory, not a regular file"));
  CHECK(fs::is_directory(folder));
  CHECK(read_text(folder / "inside.txt") == "kept\n");

  // A link to one of them is refused too, and a link to nothing (a file would appear through it).
  fs::create_symlink(fifo, dir / "to_fifo.json");
  e = error_of([&] { ts::write_file((dir / "to_fifo.json").string(), "x", "who"); });
  CHECK(contains(e, "who: cannot write " + (dir / "to_fifo.json").string() + ": it is a symbolic link to "));
  CHECK(contains(e, "a FIFO (named pipe), not a regular file"));
  fs::create_symlink(dir / "nothing.json", dir / "dangling.json");
  e = error_of([&] { ts::write_file((dir / "dangling.json").string(), "x", "who"); });
  CHECK(contains(e, "it is a symbolic link to " + (dir / "nothing.json").string() + ", which does not exist"));
  CHECK_FALSE(fs::exists(dir / "nothing.json"));
  CHECK(names_in(dir) == std::vector<std::string>{"dangling.json", "fifo.json", "folder.json", "folder.json.gz",
                                                  "to_fifo.json"});

  // /dev/null itself: refused, and still the character device it was.
  e = error_of([&] { prof::export_chrome_trace(rec, "/dev/null"); });
  CHECK(contains(e, "cannot write /dev/null: it is a character device, not a regular file"));
  CHECK(fs::is_character_file(fs::symlink_status("/dev/null")));
  e = error_of([&] { ts::write_file("/dev/full", "x", "--json /dev/full"); });
  CHECK(contains(e, "--json /dev/full: cannot write /dev/full: it is a character device"));
  CHECK(fs::is_character_file(fs::symlink_status("/dev/full")));
  // A twin of /dev/null in a folder of ours, where a process that may make device nodes can.
  const fs::path twin = dir / "null_twin.json";
  if (::mknod(twin.c_str(), S_IFCHR | 0666, makedev(1, 3)) == 0) {
    e = error_of([&] { prof::export_chrome_trace(rec, twin.string()); });
    CHECK(contains(e, "cannot write " + twin.string() + ": it is a character device"));
    CHECK(fs::is_character_file(fs::symlink_status(twin)));
  } else {
    MESSAGE("no twin of /dev/null (mknod: ", std::strerror(errno), "): /dev/null alone is checked");
  }
}

TEST_CASE("exports: a full disk is an error naming the path and ENOSPC and the old file stays as it was") {
  SmallTmpfs disk("full_disk");
  if (!disk.mounted) {
    MESSAGE("skipped the full-disk cases: cannot mount a small tmpfs (", disk.why, "); /dev/full is checked by "
            "the device case and by tests/test_executables.py");
    return;
  }
  const fs::path trace = disk.dir / "trace.json", gz = disk.dir / "trace.json.gz", lines = disk.dir / "lines.jsonl";
  const fs::path ladder = disk.dir / "ladder.jsonl";
  for (const fs::path& p : {trace, gz, lines, ladder}) write_text(p, "the old file\n");
  disk.fill();
  const std::vector<std::string> before = names_in(disk.dir);
  const prof::Recording rec = small_recording();

  for (const fs::path& p : {trace, gz}) {
    const std::string e = error_of([&] { prof::export_chrome_trace(rec, p.string()); });
    CHECK(e == "export_chrome_trace: cannot write " + p.string() + ": No space left on device");
    CHECK(read_text(p) == "the old file\n");
  }
  // The streaming writer: its writes do not throw, its commit does.
  const std::string e = error_of([&] {
    ts::FileOutput out(lines.string(), "--json " + lines.string());
    for (int i = 0; i < 100; ++i) out.write(fmt::format("{{\"line\": {}}}\n", i));
    out.commit();
  });
  CHECK(e == fmt::format("--json {}: cannot write {}: No space left on device", lines.string(), lines.string()));
  CHECK(read_text(lines) == "the old file\n");

  // ts_ladder --json on the full disk: one line on stderr, exit 1, the old file untouched.
  const ts::testing::Run r =
      ts::testing::run(fmt::format("{{ {} --op add --device cpu --runs 1 --warmup 0 --json {} >/dev/null; }}",
                                   TS_LADDER, ladder.string()));  // stderr alone
  INFO(r.output);
  CHECK(r.status == 1);
  CHECK(r.output == fmt::format("ts_ladder: --json {}: cannot write {}: No space left on device\n", ladder.string(),
                                ladder.string()));
  CHECK(read_text(ladder) == "the old file\n");
  CHECK(names_in(disk.dir) == before);  // no temporary file left behind
}

TEST_CASE("exports: through a link to a regular file, the file is replaced and the link kept") {
  const fs::path dir = fresh_dir("through_link");
  const fs::path files = fresh_dir("through_link_files");
  const fs::path real = files / "real.json";
  write_text(real, "old\n");
  fs::permissions(real, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);  // 0640
  const fs::path link = dir / "trace.json";
  fs::create_symlink(real, link);
  const prof::Recording rec = small_recording();
  prof::export_chrome_trace(rec, link.string());
  CHECK(fs::is_symlink(fs::symlink_status(link)));
  CHECK(fs::read_symlink(link) == real);
  CHECK(read_text(real) == prof::chrome_trace_json(rec, link.string()));
  CHECK(fs::status(real).permissions() ==
        (fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read));  // its mode kept
  CHECK(names_in(dir) == std::vector<std::string>{"trace.json"});
  CHECK(names_in(files) == std::vector<std::string>{"real.json"});  // the temporary file went beside it

  // A new file: 0666 less the umask.
  const mode_t old_mask = ::umask(027);
  ts::write_file((dir / "new.txt").string(), "new\n", "");
  ::umask(old_mask);
  CHECK(read_text(dir / "new.txt") == "new\n");
  CHECK(fs::status(dir / "new.txt").permissions() ==
        (fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read));

  // In a world-writable sticky folder (/tmp), a link another user planted is not followed.
  if (::geteuid() == 0) {
    const fs::path sticky = fresh_dir("sticky");
    REQUIRE(::chmod(sticky.c_str(), 01777) == 0);
    const fs::path victim = files / "victim.txt";
    write_text(victim, "victim\n");
    const fs::path planted = sticky / "trace.json";
    fs::create_symlink(victim, planted);
    REQUIRE(::lchown(planted.c_str(), 65534, 65534) == 0);
    const std::string e = error_of([&] { prof::export_chrome_trace(rec, planted.string()); });
    CHECK(contains(e, "it is a symbolic link in a world-writable sticky folder made by another user (uid 65534)"));
    CHECK(read_text(victim) == "victim\n");
    REQUIRE(::lchown(planted.c_str(), 0, 0) == 0);  // this user's own link: followed
    prof::export_chrome_trace(rec, planted.string());
    CHECK(read_text(victim) == prof::chrome_trace_json(rec, planted.string()));
  } else {
    MESSAGE("skipped the sticky-folder case: only root can give a link to another user");
  }
}

TEST_CASE("exports: the streaming writer appears only when committed") {
  const fs::path dir = fresh_dir("streaming");
  const fs::path path = dir / "lines.jsonl";
  {
    ts::FileOutput out(path.string(), "test");
    out.write("{\"a\": 1}\n");
    CHECK_FALSE(fs::exists(path));  // not yet: the lines are in the temporary file
    CHECK(names_in(dir).size() == 1);
  }  // not committed: the temporary file is removed
  CHECK(names_in(dir).empty());
  write_text(path, "old\n");
  {
    ts::FileOutput out(path.string(), "test");
    out.write("{\"a\": 1}\n");
    out.write(std::string(1 << 20, ' ') + "\n");
    out.commit();
  }
  CHECK(fs::file_size(path) == 10 + (1 << 20));
  CHECK(names_in(dir) == std::vector<std::string>{"lines.jsonl"});
  CHECK(contains(error_of([&] { ts::write_file((dir / "no_folder" / "x.txt").string(), "x", "who"); }),
                 "who: cannot write " + (dir / "no_folder" / "x.txt").string() + ": No such file or directory"));
  CHECK(contains(error_of([&] { ts::write_file("", "x", "who"); }), "who: cannot write a file with an empty name"));
}

TEST_CASE("exports: invalid UTF-8 in names and in the path becomes U+FFFD and the trace parses as strict UTF-8") {
  // Each ill-formed sequence is replaced as Python's bytes.decode("utf-8", errors="replace") does.
  const std::string R = "\xEF\xBF\xBD";  // U+FFFD
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"a\xff" "b", "a" + R + "b"},
      {"\xe2\x82", R},                          // a cut three-byte character: one U+FFFD
      {"\xe2\x82x", R + "x"},
      {"\xf0\x80\x80", R + R + R},              // overlong: each byte its own
      {"\xed\xa0\x80", R + R + R},              // a surrogate
      {"\xc0\xaf", R + R},
      {"\xf4\x90\x80\x80", R + R + R + R},      // above U+10FFFF
      {"\xf0\x9f\x98", R},
      {"\x80\x80", R + R},
      {"\xf5", R},
      {"\xe0\x80\xaf", R + R + R},
      {"\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xef\xbf\xbd", "\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xef\xbf\xbd"},
      {"q\"\\\n\x01\xff", "q\"\\\n\x01" + R},  // escapes and a replacement in one string
  };
  const prof::Recording rec = small_recording();
  for (const auto& [bytes, expected] : cases) {
    INFO(nlohmann::json(expected).dump());
    const std::string text = prof::chrome_trace_json(rec, bytes);
    nlohmann::json trace;
    REQUIRE_NOTHROW(trace = nlohmann::json::parse(text));
    CHECK(trace["traceName"].get<std::string>() == expected);
  }

  // A record_function name and the path itself, through a real profile and export.
  const fs::path dir = fresh_dir("utf8");
  const fs::path path = dir / "trace_\xff\xc3.json";
  prof::Profiler profiler;
  {
    prof::ProfilerGuard guard(profiler);
    auto scope = prof::record_function("bad \xfe\xff name \xe2\x82 end \xc3\xa9");
  }
  profiler.export_chrome_trace(path.string());
  const std::string text = read_text(path);
  nlohmann::json trace;
  REQUIRE_NOTHROW(trace = nlohmann::json::parse(text));
  CHECK(trace["traceName"].get<std::string>() == (dir / "trace_").string() + R + R + ".json");
  const auto& events = trace["traceEvents"];
  CHECK(std::any_of(events.begin(), events.end(), [&](const nlohmann::json& ev) {
    return ev.value("name", "") == "bad " + R + R + " name " + R + " end \xc3\xa9";
  }));
  // Python's json.load reads it too (strict UTF-8, the way HTA and Perfetto's importers read it).
  if (ts::testing::run("python3 -c 'pass'").status == 0) {
    const ts::testing::Run r = ts::testing::run(
        "python3 -c 'import json, sys; json.load(open(sys.argv[1], encoding=\"utf-8\", errors=\"strict\"))' '" +
        path.string() + "'");
    INFO(r.output);
    CHECK(r.status == 0);
  } else {
    MESSAGE("no python3: nlohmann::json alone checked the trace");
  }
}

TEST_CASE("exports: valid input gives the same bytes as chrome_trace_json, plain and gzipped") {
  SyntheticEvents s;
  s.step("ProfilerStep#2", 1000, 61000, -1);
  s.op("ts::mm \xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80 \"quoted\"\t", 2000, 3500, 0);
  const fs::path dir = fresh_dir("identical");
  for (const char* name : {"trace.json", "trace.json.gz"}) {
    const fs::path path = dir / name;
    prof::export_chrome_trace(s.rec, path.string());
    const std::string text = fs::path(name).extension() == ".gz" ? gunzip(path) : read_text(path);
    CHECK(text == prof::chrome_trace_json(s.rec, path.string()));
    CHECK(contains(text, "\"ts::mm \xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80 \\\"quoted\\\"\\t\""));  // kept as is
  }
  CHECK(read_text(dir / "trace.json.gz").substr(0, 3) == "\x1f\x8b\x08");  // gzip, deflate
}
