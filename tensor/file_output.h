// tensor/file_output.h: how every output file is written: whole or not at all, never through a
// planted link, never over a device.
//
//   ts::write_file("run.json", text, "export_chrome_trace");    // one shot
//
//   ts::FileOutput out("bench.jsonl", "--json bench.jsonl");     // streaming
//   out.write(line);  ...                                        // as the pieces come
//   out.commit();                                                // the file appears, or ts::Error
//
// The bytes go to a new file made by mkstemp (O_CREAT | O_EXCL: it never opens anything already
// there, so a link planted at any name in the folder is never followed) in the target's own
// folder, so that the final rename is atomic: a reader sees the old file or the whole new one.
// Every write is checked (partial writes and EINTR are retried), the file is fsync'ed and closed
// with both checked, then renamed over the target. On any failure the temporary file is removed,
// the target is left as it was, and ts::Error says
//   <who>: cannot write <path>: <reason>        e.g. "...: No space left on device"
//
// What the target may be:
//   - nothing yet: a new file, mode 0666 less the process umask (what fopen would give);
//   - a regular file: replaced, keeping its permission bits (rwx for user, group, others); at this
//     name only: another hard link to the old file keeps the old bytes;
//   - a symbolic link to a regular file: the file it names is replaced (the temporary file goes in
//     that file's folder) and the link stays as it is, pointing to the new file. A link to
//     nothing, or to anything else, is refused; so is a link in a world-writable sticky folder
//     (/tmp) owned by neither this user nor the folder's owner, the rule the kernel's
//     fs.protected_symlinks applies to opens;
//   - anything else (a directory, a character or block device, a FIFO, a socket): refused, and
//     left untouched (/dev/null stays a device).
#pragma once

#include <string>
#include <string_view>

namespace ts {

// Writes `bytes` to `path` as above; `who` begins the error message ("" for none).
void write_file(const std::string& path, std::string_view bytes, const std::string& who);

// A file written in pieces, which appears at `path` only when commit() succeeds.
class FileOutput {
 public:
  // Checks the target and makes the temporary file beside it; ts::Error when either fails.
  FileOutput(std::string path, std::string who);
  // Not committed (an exception, an early return): the temporary file is removed.
  ~FileOutput();
  FileOutput(const FileOutput&) = delete;
  FileOutput& operator=(const FileOutput&) = delete;

  // Appends bytes. A failed write does not throw: the first error is kept, later pieces are
  // dropped, and commit() throws it (a run goes on and prints its results; its file is lost).
  void write(std::string_view bytes);
  // fsync, close, rename over the target; ts::Error for the first failure of any step.
  void commit();

  const std::string& path() const { return path_; }

 private:
  [[noreturn]] void abandon(int error);  // closes and removes the temporary file, throws

  std::string path_;    // as given: the name in messages
  std::string who_;
  std::string target_;  // what the rename replaces: path_, or the regular file a link at path_ names
  std::string temp_;    // the mkstemp file beside target_
  int fd_ = -1;
  int error_ = 0;  // errno of the first failed write
  bool committed_ = false;
};

}  // namespace ts
