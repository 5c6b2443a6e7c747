// Tests model/checkpoint_tree.h and its use by the one writer: every marker makes a folder a checkpoint
// tree, found from any path inside it (through symlinks both ways); near misses do not; every writer but
// the checkpoint writer is refused inside one, naming the tree.
#include "model/checkpoint_tree.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "model/file_io.h"
#include "tests/common/error_message.h"
#include "tests/common/test_dir.h"

namespace tz {
namespace {

namespace fs = std::filesystem;
using testing::error_message;

bool has(const std::string& s, const std::string& sub) { return s.find(sub) != std::string::npos; }

void touch(const std::string& path, const std::string& text = "") { std::ofstream(path) << text; }

struct Marker {
  const char* name;
  std::function<void(const std::string& dir)> make;
  const char* says;  // in checkpoint_tree_marker's answer
};

const std::vector<Marker>& markers() {
  static const std::vector<Marker> m = {
      {"pointer", [](const std::string& d) { touch(d + "/latest", "step-00000003\n"); }, "checkpoint pointer"},
      {"lock", [](const std::string& d) { touch(d + "/.tierzero.lock"); }, ".tierzero.lock"},
      {"step folder", [](const std::string& d) { fs::create_directory(d + "/step-00000003"); }, "step-00000003"},
      {"crashed save", [](const std::string& d) { fs::create_directory(d + "/.tmp-step-00000004"); },
       ".tmp-step-00000004"},
      {"checkpoint folder",
       [](const std::string& d) {
         touch(d + "/manifest.json", "{}");
         touch(d + "/rank-00000.bin");
       },
       "manifest.json and rank-00000.bin"},
  };
  return m;
}

TEST(CheckpointTree, EachMarkerMakesATreeFoundFromEveryPathInsideIt) {
  for (const Marker& m : markers()) {
    testing::TestDir dir;
    const std::string tree = dir.file("tree");
    fs::create_directories(tree + "/a/b");
    m.make(tree);
    EXPECT_TRUE(has(checkpoint_tree_marker(tree), m.says)) << m.name << ": " << checkpoint_tree_marker(tree);
    for (const std::string& p : {tree, tree + "/latest", tree + "/new.out", tree + "/a/b/new.out",
                                 tree + "/no/such/folder/x", tree + "/a/../new.out"}) {
      const auto t = checkpoint_tree_of(p);
      ASSERT_TRUE(t) << m.name << ": " << p;
      EXPECT_EQ(t->root, tree) << m.name << ": " << p;
    }
    EXPECT_FALSE(checkpoint_tree_of(dir.file("beside.out"))) << m.name;
  }
}

TEST(CheckpointTree, NearMissesAreNoTree) {
  testing::TestDir dir;
  const std::string d = dir.path();
  touch(d + "/latest", "not a step name\n");  // a file that happens to be called latest
  touch(d + "/step-00000001");                // a file, not a folder
  fs::create_directory(d + "/step-123");      // not 8 digits
  fs::create_directory(d + "/step-0000000x");
  touch(d + "/manifest.json", "{}");  // a manifest without rank files
  fs::create_directory(d + "/latest.d");
  EXPECT_EQ(checkpoint_tree_marker(d), "");
  EXPECT_FALSE(checkpoint_tree_of(d + "/out.bin"));
  ASSERT_EQ(::mkfifo((d + "/fifo").c_str(), 0600), 0);
  fs::remove(d + "/latest");
  ASSERT_EQ(::mkfifo((d + "/latest").c_str(), 0600), 0);  // not read, not waited on
  EXPECT_EQ(checkpoint_tree_marker(d), "");
}

TEST(CheckpointTree, SymlinksIntoATreeOrOutOfOneDoNotHideIt) {
  testing::TestDir dir;
  const std::string tree = dir.file("ckpt"), away = dir.file("away");
  fs::create_directories(tree + "/step-00000001");
  fs::create_directories(away);
  fs::create_symlink(tree + "/step-00000001", dir.file("into"));
  fs::create_symlink(away, tree + "/out");
  auto into = checkpoint_tree_of(dir.file("into/x.bin"));
  ASSERT_TRUE(into);
  EXPECT_EQ(into->root, tree);
  auto out = checkpoint_tree_of(tree + "/out/x.bin");
  ASSERT_TRUE(out);
  EXPECT_EQ(out->root, tree);
  EXPECT_FALSE(checkpoint_tree_of(away + "/x.bin"));
}

TEST(CheckpointTree, NestedTreesNameTheOutermost) {
  testing::TestDir dir;
  const std::string outer = dir.file("S"), inner = outer + "/step-00000002";
  fs::create_directories(inner);
  touch(inner + "/manifest.json", "{}");
  touch(inner + "/rank-00000.bin");
  touch(outer + "/latest", "step-00000002\n");
  const auto t = checkpoint_tree_of(inner + "/rank-00000.bin");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->root, outer);
}

// Every writer (AtomicOutputFile) is refused inside any tree before it creates anything, naming the tree
// and where to write instead; the checkpoint writer alone writes there.
TEST(CheckpointTree, TheWriterRefusesEveryKindOfFileInATreeButTheCheckpointWritersOwn) {
  for (const Marker& m : markers()) {
    testing::TestDir dir;
    const std::string tree = dir.file("S");
    fs::create_directories(tree + "/step-00000001");
    m.make(tree);
    touch(tree + "/step-00000001/rank-00000.bin", "data");
    for (const std::string& target : {tree + "/latest", tree + "/.tierzero.lock", tree + "/new.out",
                                      tree + "/step-00000001/rank-00000.bin", tree + "/step-00000001/manifest.json"}) {
      const bool existed = fs::exists(target);
      const std::string msg = error_message([&] { AtomicOutputFile f(target, "safetensors file"); });
      EXPECT_TRUE(has(msg, "safetensors file '" + target + "' lies inside the checkpoint tree '" + tree + "'"))
          << m.name << ": " << msg;
      EXPECT_TRUE(has(msg, "write outside that folder, e.g. in '" + dir.path() + "'")) << msg;
      EXPECT_EQ(fs::exists(target), existed) << target;
    }
    std::size_t entries = 0;
    for (const auto& e : fs::recursive_directory_iterator(tree)) entries += e.path().string().find(".tmp.") != std::string::npos;
    EXPECT_EQ(entries, 0u) << m.name << ": a temporary file was left";
    AtomicOutputFile own(tree + "/latest", "checkpoint pointer", OutputWriter::checkpoint);
    own.write("step-00000001\n", 14);
    own.commit();
  }
}

}  // namespace
}  // namespace tz
