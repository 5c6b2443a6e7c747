// Tests model/protected_inputs.h through the one writer (AtomicOutputFile): an output never replaces a
// device node, FIFO, socket or folder, never writes to or inside a protected input (by name, symlink,
// hard link, a symlinked or bind-mounted folder), is checked again just before its rename, and leaves
// everything it refused as it was. Device nodes are made with mknod in the test's own folder.
#include "model/protected_inputs.h"

#include <gtest/gtest.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "model/file_io.h"
#include "tests/common/error_message.h"
#include "tests/common/test_dir.h"

namespace tz {
namespace {

namespace fs = std::filesystem;
using testing::error_message;

bool has(const std::string& s, const std::string& sub) { return s.find(sub) != std::string::npos; }

std::string bytes_of(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

// `writer`: the checkpoint writer may write inside a checkpoint tree (these tests make some).
void write_file(const std::string& path, const std::string& text, OutputWriter writer = OutputWriter::any) {
  AtomicOutputFile out(path, "test file", writer);
  out.write(text.data(), text.size());
  out.commit();
}

// Entries of a folder other than those named (what a refused writer might have left).
int entries(const std::string& dir) {
  int n = 0;
  for (const auto& e : fs::directory_iterator(dir)) n += e.path().filename().string().find(".tmp.") != std::string::npos;
  return n;
}

TEST(ProtectedInputs, DevicesFifosSocketsAndFoldersAreNeverReplaced) {
  testing::TestDir dir;
  const std::string chr = dir.file("null"), fifo = dir.file("fifo"), sock = dir.file("sock"), sub = dir.file("sub");
  const bool have_device = ::mknod(chr.c_str(), S_IFCHR | 0666, makedev(1, 3)) == 0;  // /dev/null's numbers
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const int s = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", sock.c_str());
  ASSERT_EQ(::bind(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  fs::create_directory(sub);
  ASSERT_EQ(::symlink(fifo.c_str(), dir.file("to-fifo").c_str()), 0);
  struct Case {
    std::string path, kind;
    mode_t type;
  };
  std::vector<Case> cases = {{fifo, "a FIFO", S_IFIFO},
                             {sock, "a socket", S_IFSOCK},
                             {sub, "a folder", S_IFDIR},
                             {dir.file("to-fifo"), "a FIFO (through a symlink)", S_IFIFO}};
  if (have_device) cases.push_back({chr, "a character device", S_IFCHR});
  for (const Case& c : cases) {
    SCOPED_TRACE(c.path);
    const std::string m = error_message([&] { AtomicOutputFile out(c.path, "safetensors file"); });
    EXPECT_TRUE(has(m, "safetensors file '" + c.path + "' exists and is " + c.kind + ", not a regular file")) << m;
    struct stat st {};
    ASSERT_EQ(::stat(c.path.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & S_IFMT, c.type) << "left as it was";
  }
  EXPECT_EQ(entries(dir.path()), 0) << "nothing created next to them";
  ::close(s);
  if (!have_device) GTEST_SKIP() << "mknod is not permitted here (not root): the device-node case did not run";
}

TEST(ProtectedInputs, AnOutputThatIsOrIsInsideAnInputIsRefusedByNameSymlinkOrHardLink) {
  testing::TestDir dir;
  const std::string data = dir.file("train.bin"), ckpt = dir.file("ckpt/step-00000004");
  write_file(data, "tokens");
  fs::create_directories(ckpt);
  write_file(ckpt + "/manifest.json", "{}", OutputWriter::checkpoint);
  ASSERT_EQ(::symlink(data.c_str(), dir.file("link.bin").c_str()), 0);
  ASSERT_EQ(::link(data.c_str(), dir.file("hard.bin").c_str()), 0);
  ASSERT_EQ(::symlink(ckpt.c_str(), dir.file("ckpt-link").c_str()), 0);
  const ProtectedInput a(data, "--data"), b(ckpt, "the checkpoint being resumed");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {data, "is --data '" + data + "', which this command reads"},
      {dir.file("link.bin"), "is --data '" + data + "' (it is a symlink to it)"},
      {dir.file("hard.bin"), "is --data '" + data + "' (a hard link to it)"},
      {ckpt + "/manifest.json", "is inside the checkpoint being resumed '" + ckpt + "'"},
      {ckpt + "/new.safetensors", "is inside the checkpoint being resumed '" + ckpt + "'"},
      {dir.file("ckpt-link/x"), "is inside the checkpoint being resumed '" + ckpt + "'"},
      {dir.file("ckpt/step-00000004/../step-00000004/y"), "is inside the checkpoint being resumed"}};
  for (const auto& [out, want] : cases) {
    SCOPED_TRACE(out);
    const std::string m = error_message([&] { write_file(out, "replaced"); });
    EXPECT_TRUE(has(m, "test file '" + out + "' " + want)) << m;
  }
  EXPECT_EQ(bytes_of(data), "tokens");
  EXPECT_EQ(bytes_of(ckpt + "/manifest.json"), "{}");
  EXPECT_EQ(std::distance(fs::directory_iterator(ckpt), {}), 1) << "nothing was created inside the checkpoint";
  EXPECT_EQ(entries(dir.path()), 0);
  // A file beside the checkpoint tree, and a file of the same name elsewhere, are fine (a sibling of the
  // checkpoint is inside its tree: model/checkpoint_tree.h).
  write_file(dir.file("model.safetensors"), "ok");
  write_file(dir.file("train.bin.copy"), "ok");
}

TEST(ProtectedInputs, OnlyTheNamedWriterReplacesAProtectedFileAndProtectionEndsWithItsOwner) {
  testing::TestDir dir;
  const std::string latest = dir.file("latest");  // a pointer: its folder is a checkpoint tree
  write_file(latest, "step-00000001\n", OutputWriter::checkpoint);
  {
    const ProtectedInput p(latest, "the checkpoint pointer", "checkpoint pointer");
    const std::string m = error_message([&] { write_file(latest, "x"); });
    EXPECT_TRUE(has(m, "is the checkpoint pointer '" + latest + "'")) << m;
    AtomicOutputFile pointer(latest, "checkpoint pointer", OutputWriter::checkpoint);
    pointer.write("step-00000002\n", 14);
    pointer.commit();
    EXPECT_EQ(bytes_of(latest), "step-00000002\n");
  }
  write_file(latest, "free again", OutputWriter::checkpoint);
  EXPECT_EQ(bytes_of(latest), "free again");
}

// The check runs again just before the rename: a target that became a FIFO, or an input, while the file
// was being written is not replaced, and the temporary file is gone.
TEST(ProtectedInputs, TheTargetIsCheckedAgainJustBeforeTheRename) {
  testing::TestDir dir;
  const std::string out = dir.file("model.safetensors");
  {
    AtomicOutputFile f(out, "safetensors file");
    f.write("abc", 3);
    ASSERT_EQ(::mkfifo(out.c_str(), 0600), 0);
    const std::string m = error_message([&] { f.commit(); });
    EXPECT_TRUE(has(m, "exists and is a FIFO, not a regular file")) << m;
  }
  struct stat st {};
  ASSERT_EQ(::stat(out.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  EXPECT_EQ(entries(dir.path()), 0) << "the temporary file was removed";
  ::unlink(out.c_str());
  {
    AtomicOutputFile f(out, "safetensors file");
    f.write("abc", 3);
    const ProtectedInput late(out, "--init-from");
    const std::string m = error_message([&] { f.commit(); });
    EXPECT_TRUE(has(m, "is --init-from '" + out + "'")) << m;
  }
  EXPECT_FALSE(fs::exists(out));
  EXPECT_EQ(entries(dir.path()), 0);
}

// A protected folder the command itself removes (a resumed checkpoint pruned by --keep-last) frees its
// inode; a new folder that reuses it is not the input. (Where the file system hands the inode out again:
// ext4 does at once; tmpfs never, and the test then skips.)
TEST(ProtectedInputs, AFolderThatReusesTheInodeOfARemovedInputIsNotTheInput) {
  testing::TestDir dir;
  const std::string ckpt = dir.file("step-00000004");
  fs::create_directories(ckpt);
  struct stat st {};
  ASSERT_EQ(::stat(ckpt.c_str(), &st), 0);
  const ProtectedInput p(ckpt, "the checkpoint being resumed");
  fs::remove(ckpt);
  std::string reused;
  for (int i = 0; i < 64 && reused.empty(); ++i) {
    const std::string d = dir.file(".tmp-step-" + std::to_string(i));
    fs::create_directory(d);
    struct stat now {};
    ASSERT_EQ(::stat(d.c_str(), &now), 0);
    if (now.st_ino == st.st_ino && now.st_dev == st.st_dev) reused = d;
  }
  if (reused.empty()) GTEST_SKIP() << "this file system gave no new folder the removed folder's inode";
  write_file(reused + "/rank-00000.bin", "data");
  EXPECT_EQ(bytes_of(reused + "/rank-00000.bin"), "data");
  const std::string m = error_message([&] { write_file(ckpt + "/x", "x"); });  // by name it stays protected
  EXPECT_TRUE(has(m, "is inside the checkpoint being resumed")) << m;
}

// A bind mount gives a protected folder a second name the path cannot show: the folders on the way up
// are compared by device and inode. Needs a private mount namespace (root).
TEST(ProtectedInputs, AFolderBindMountedElsewhereIsStillProtected) {
  testing::TestDir dir;
  const std::string ckpt = dir.file("ckpt"), view = dir.file("view");
  fs::create_directories(ckpt);
  fs::create_directories(view);
  if (::unshare(CLONE_NEWNS) != 0 || ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
      ::mount(ckpt.c_str(), view.c_str(), nullptr, MS_BIND, nullptr) != 0)
    GTEST_SKIP() << "cannot bind-mount in a private mount namespace here (not root)";
  const ProtectedInput p(ckpt, "the checkpoint being exported");
  const std::string m = error_message([&] { write_file(view + "/x.safetensors", "x"); });
  EXPECT_TRUE(has(m, "is inside the checkpoint being exported '" + ckpt + "'")) << m;
  EXPECT_EQ(std::distance(fs::directory_iterator(ckpt), {}), 0);
  ::umount(view.c_str());
}

}  // namespace
}  // namespace tz
