// Model roots: only regular files under the configured directories, one
// refusal for "outside" and "absent", symlinks and '..' resolved, FIFOs and
// devices refused without blocking.
#include "service/model_roots.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

namespace gpucast::service {
namespace {

namespace fs = std::filesystem;

class ModelRootsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "gpucast-roots-XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = fs::canonical(tmpl).string();
    fs::create_directories(dir_ + "/root/sub");
    fs::create_directories(dir_ + "/outside");
    std::ofstream(dir_ + "/root/m.onnx") << "inside";
    std::ofstream(dir_ + "/root/sub/n.onnx") << "nested";
    std::ofstream(dir_ + "/outside/secret.onnx") << "secret";
    auto r = ModelRoots::Create({dir_ + "/root"});
    ASSERT_TRUE(r.ok()) << r.message();
    roots_ = std::move(r).value();
  }
  void TearDown() override { fs::remove_all(dir_); }
  static std::string Read(const OpenedModel& m) {
    char buf[64];
    ssize_t n = ::pread(m.fd.get(), buf, sizeof buf, 0);
    return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
  }
  std::string dir_;
  ModelRoots roots_;
};

TEST_F(ModelRootsTest, OpensFilesUnderTheRootByAbsoluteOrRelativePath) {
  auto a = roots_.Open(dir_ + "/root/m.onnx");
  ASSERT_TRUE(a.ok()) << a.message();
  EXPECT_EQ(a->path, dir_ + "/root/m.onnx");
  EXPECT_EQ(Read(*a), "inside");
  auto b = roots_.Open("sub/n.onnx");
  ASSERT_TRUE(b.ok()) << b.message();
  EXPECT_EQ(b->path, dir_ + "/root/sub/n.onnx");
  EXPECT_EQ(Read(*b), "nested");
  // '..' that stays inside is fine.
  auto c = roots_.Open(dir_ + "/root/sub/../m.onnx");
  ASSERT_TRUE(c.ok()) << c.message();
  EXPECT_EQ(c->path, dir_ + "/root/m.onnx");
}

TEST_F(ModelRootsTest, OutsideAndAbsentGetTheSameRefusal) {
  const std::string outside = dir_ + "/outside/secret.onnx";
  const std::string absent = dir_ + "/outside/nothing.onnx";
  const std::string absent_inside = dir_ + "/root/nothing.onnx";
  EXPECT_EQ(roots_.Open(outside).message(), "model '" + outside + "': no such model file under the service's model roots");
  EXPECT_EQ(roots_.Open(absent).message(), "model '" + absent + "': no such model file under the service's model roots");
  EXPECT_EQ(roots_.Open(absent_inside).message(), ModelRoots::Refusal(absent_inside));
  EXPECT_EQ(roots_.Open("/etc/shadow").message(), ModelRoots::Refusal("/etc/shadow"));
  EXPECT_EQ(roots_.Open("/etc/passwd").message(), ModelRoots::Refusal("/etc/passwd"));
  EXPECT_EQ(roots_.Open("/etc/nonexistent-xyz").message(), ModelRoots::Refusal("/etc/nonexistent-xyz"));
  // '..' out of the root, relative or absolute.
  EXPECT_EQ(roots_.Open("../outside/secret.onnx").message(), ModelRoots::Refusal("../outside/secret.onnx"));
  EXPECT_FALSE(roots_.Open(dir_ + "/root/../outside/secret.onnx").ok());
  // The root itself (a directory) and a path with a NUL byte.
  EXPECT_FALSE(roots_.Open(dir_ + "/root").ok());
  EXPECT_FALSE(roots_.Open(std::string("m.onnx\0x", 8)).ok());
  EXPECT_FALSE(roots_.Open("").ok());
  // A sibling directory whose name starts like the root's is not under it.
  fs::create_directories(dir_ + "/rootx");
  std::ofstream(dir_ + "/rootx/m.onnx") << "x";
  EXPECT_FALSE(roots_.Open(dir_ + "/rootx/m.onnx").ok());
}

TEST_F(ModelRootsTest, SymlinksOutOfTheRootAreRefused) {
  fs::create_symlink(dir_ + "/outside/secret.onnx", dir_ + "/root/link.onnx");
  fs::create_directory_symlink(dir_ + "/outside", dir_ + "/root/linkdir");
  fs::create_symlink("/etc/passwd", dir_ + "/root/passwd.onnx");
  EXPECT_EQ(roots_.Open("link.onnx").message(), ModelRoots::Refusal("link.onnx"));
  EXPECT_FALSE(roots_.Open(dir_ + "/root/linkdir/secret.onnx").ok());
  EXPECT_FALSE(roots_.Open("passwd.onnx").ok());
  // A symlink that stays inside the root is followed.
  fs::create_symlink(dir_ + "/root/m.onnx", dir_ + "/root/alias.onnx");
  auto a = roots_.Open("alias.onnx");
  ASSERT_TRUE(a.ok()) << a.message();
  EXPECT_EQ(a->path, dir_ + "/root/m.onnx");
}

TEST_F(ModelRootsTest, FifosAndDevicesAreRefusedWithoutBlocking) {
  ASSERT_EQ(mkfifo((dir_ + "/root/fifo.onnx").c_str(), 0600), 0);
  auto f = roots_.Open("fifo.onnx");  // would block forever without O_NONBLOCK
  EXPECT_FALSE(f.ok());
  auto everything = ModelRoots::Create({"/"});
  ASSERT_TRUE(everything.ok());
  EXPECT_FALSE(everything->Open("/dev/zero").ok());
  EXPECT_FALSE(everything->Open("/dev/null").ok());
  EXPECT_TRUE(everything->Open(dir_ + "/outside/secret.onnx").ok());
}

TEST_F(ModelRootsTest, NoRootsRefuseEverything) {
  auto none = ModelRoots::Create({});
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->Open(dir_ + "/root/m.onnx").message(), ModelRoots::Refusal(dir_ + "/root/m.onnx"));
  EXPECT_FALSE(none->Open("m.onnx").ok());
}

TEST_F(ModelRootsTest, BadRootIsAnError) {
  EXPECT_EQ(ModelRoots::Create({dir_ + "/missing"}).message(),
            "--model-root '" + dir_ + "/missing': not an existing directory");
  EXPECT_FALSE(ModelRoots::Create({dir_ + "/root/m.onnx"}).ok());
}

}  // namespace
}  // namespace gpucast::service
