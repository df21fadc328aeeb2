// tensor/file_output.cpp: a temporary file beside the target, every write checked, fsync, rename.
#include "tensor/file_output.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <utility>

#include "tensor/error.h"

namespace ts {

namespace {

std::string prefix(const std::string& who) { return who.empty() ? std::string() : who + ": "; }

// "a directory", "a character device": what stands at a path that is not a regular file.
const char* kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISLNK(mode)) return "a symbolic link";
  return "not a regular file";
}

// The folder part of a path, with its slash ("out/" for "out/a.json"; "" for "a.json").
std::string folder_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? std::string() : path.substr(0, slash + 1);
}

// The process umask, read without changing it (umask(2) only sets it, and setting it back
// races with other threads creating files); from /proc, else by setting and restoring it.
mode_t current_umask() {
  if (std::FILE* f = std::fopen("/proc/self/status", "r")) {
    char line[256];
    unsigned mask = 0;
    bool found = false;
    while (!found && std::fgets(line, sizeof line, f) != nullptr) found = std::sscanf(line, "Umask: %o", &mask) == 1;
    std::fclose(f);
    if (found) return static_cast<mode_t>(mask);
  }
  const mode_t mask = ::umask(022);
  ::umask(mask);
  return mask;
}

// The text of a symbolic link ("?" when it cannot be read).
std::string link_text(const std::string& path) {
  char buffer[4096];
  const ssize_t n = ::readlink(path.c_str(), buffer, sizeof buffer);
  return n < 0 ? std::string("?") : std::string(buffer, static_cast<size_t>(n));
}

struct Target {
  std::string file;  // the name the rename replaces
  mode_t mode;       // the permission bits the new file gets
};

// What `path` names and what writing it replaces; ts::Error when it must not be replaced.
Target resolve(const std::string& path, const std::string& who) {
  TS_CHECK(!path.empty(), "{}cannot write a file with an empty name", prefix(who));
  const std::string says = fmt::format("{}cannot write {}", prefix(who), path);
  struct stat st{};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno != ENOENT) fail("{}: {}", says, std::strerror(errno));  // a file in the folder path, no permission
    return {path, static_cast<mode_t>(0666 & ~current_umask())};
  }
  if (S_ISREG(st.st_mode)) return {path, static_cast<mode_t>(st.st_mode & 0777)};
  TS_CHECK(S_ISLNK(st.st_mode), "{}: it is {}, not a regular file (refusing to replace it)", says, kind_of(st.st_mode));

  // A symbolic link. In a world-writable sticky folder anyone may plant one: follow it only when
  // this user or the folder's owner made it (fs.protected_symlinks' rule).
  const std::string folder = folder_of(path);
  struct stat dir{};
  if (::stat(folder.empty() ? "." : folder.c_str(), &dir) == 0 && (dir.st_mode & S_ISVTX) && (dir.st_mode & S_IWOTH))
    TS_CHECK(st.st_uid == ::geteuid() || st.st_uid == dir.st_uid,
             "{}: it is a symbolic link in a world-writable sticky folder made by another user (uid {}): "
             "refusing to follow it",
             says, static_cast<long>(st.st_uid));
  const std::unique_ptr<char, decltype(&std::free)> real(::realpath(path.c_str(), nullptr), &std::free);
  if (real == nullptr) {
    TS_CHECK(errno != ENOENT, "{}: it is a symbolic link to {}, which does not exist (refusing to create a file "
             "through a link)", says, link_text(path));
    fail("{}: {}", says, std::strerror(errno));
  }
  struct stat pointed{};
  if (::stat(real.get(), &pointed) != 0) fail("{}: {}", says, std::strerror(errno));
  TS_CHECK(S_ISREG(pointed.st_mode), "{}: it is a symbolic link to {}, {}, not a regular file (refusing to replace it)",
           says, real.get(), kind_of(pointed.st_mode));
  return {real.get(), static_cast<mode_t>(pointed.st_mode & 0777)};
}

}  // namespace

FileOutput::FileOutput(std::string path, std::string who) : path_(std::move(path)), who_(std::move(who)) {
  const Target target = resolve(path_, who_);
  target_ = target.file;
  // ".<name>.XXXXXX" beside the target (the name cut short enough for NAME_MAX).
  const std::string folder = folder_of(target_);
  temp_ = fmt::format("{}.{}.XXXXXX", folder, target_.substr(folder.size()).substr(0, 200));
  fd_ = ::mkostemp(temp_.data(), O_CLOEXEC);  // mkstemp, and closed in a child that execs
  if (fd_ < 0) {
    const int error = errno;
    temp_.clear();  // a name mkostemp tried: not ours to remove
    fail("{}cannot write {}: {}", prefix(who_), path_, std::strerror(error));
  }
  if (::fchmod(fd_, target.mode) != 0) abandon(errno);  // mkstemp makes it 0600
}

FileOutput::~FileOutput() {
  if (committed_) return;
  if (fd_ >= 0) ::close(fd_);
  if (!temp_.empty()) ::unlink(temp_.c_str());
}

void FileOutput::write(std::string_view bytes) {
  while (error_ == 0 && !bytes.empty()) {
    const ssize_t n = ::write(fd_, bytes.data(), std::min<size_t>(bytes.size(), size_t{1} << 30));
    if (n < 0) {
      if (errno != EINTR) error_ = errno;
    } else if (n == 0) {
      error_ = EIO;  // a regular file that takes nothing, and says no more
    } else {
      bytes.remove_prefix(static_cast<size_t>(n));
    }
  }
}

void FileOutput::commit() {
  TS_CHECK(!committed_ && fd_ >= 0, "{}{}: commit() after the file was committed or given up", prefix(who_), path_);
  if (error_ != 0) abandon(error_);
  if (::fsync(fd_) != 0) abandon(errno);
  const int fd = std::exchange(fd_, -1);
  if (::close(fd) != 0) abandon(errno);  // NFS and quotas report a lost write here
  if (::rename(temp_.c_str(), target_.c_str()) != 0) abandon(errno);
  committed_ = true;
}

void FileOutput::abandon(int error) {
  if (fd_ >= 0) ::close(std::exchange(fd_, -1));
  ::unlink(temp_.c_str());
  temp_.clear();
  fail("{}cannot write {}: {}", prefix(who_), path_, std::strerror(error));
}

void write_file(const std::string& path, std::string_view bytes, const std::string& who) {
  FileOutput out(path, who);
  out.write(bytes);
  out.commit();
}

}  // namespace ts
