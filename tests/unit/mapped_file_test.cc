// io/mapped_file.h: pages of a registered read-only file mapping are handed back and read the
// file's bytes again afterwards; anything else (heap memory, a range past the mapping, a mapping
// no longer registered) is left alone.
#include "io/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

namespace ingot {
namespace {

uint8_t pattern(size_t i) { return uint8_t(i * 7 % 251); }

// The process's resident set in bytes (/proc/self/statm's second field, in pages).
size_t resident_bytes() {
  std::ifstream f("/proc/self/statm");
  size_t total = 0, resident = 0;
  f >> total >> resident;
  return resident * size_t(sysconf(_SC_PAGESIZE));
}

class MappedFile : public ::testing::Test {
 protected:
  static constexpr size_t kBytes = size_t(64) << 20;

  void SetUp() override {
    char path[] = "/tmp/ingot_mapped_XXXXXX";
    const int fd = mkstemp(path);
    ASSERT_GE(fd, 0);
    path_ = path;
    std::vector<uint8_t> bytes(kBytes);
    for (size_t i = 0; i < kBytes; ++i) bytes[i] = pattern(i);
    ASSERT_EQ(write(fd, bytes.data(), kBytes), ssize_t(kBytes));
    base_ = mmap(nullptr, kBytes, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    ASSERT_NE(base_, MAP_FAILED);
  }

  void TearDown() override {
    if (base_ != MAP_FAILED) unregister_file_mapping(base_), munmap(base_, kBytes);
    if (!path_.empty()) std::remove(path_.c_str());
  }

  const uint8_t* bytes() const { return static_cast<const uint8_t*>(base_); }

  // Reads every page; whether each byte is the file's.
  bool reads_the_file() const {
    for (size_t i = 0; i < kBytes; ++i)
      if (bytes()[i] != pattern(i)) return false;
    return true;
  }

  std::string path_;
  void* base_ = MAP_FAILED;
};

TEST_F(MappedFile, DroppedPagesLeaveTheResidentSetAndReadTheFileAgain) {
  register_file_mapping(base_, kBytes);
  ASSERT_TRUE(reads_the_file());
  const size_t before = resident_bytes();
  EXPECT_TRUE(drop_file_pages(base_, kBytes));
  const size_t after = resident_bytes();
  EXPECT_LT(after + kBytes / 2, before) << "resident " << before << " -> " << after << " bytes";
  EXPECT_TRUE(reads_the_file());
  // A range inside, unaligned: its whole pages go, the rest stays; the bytes are the file's.
  EXPECT_TRUE(drop_file_pages(bytes() + 100, 3 * 4096 + 5));
  EXPECT_TRUE(reads_the_file());
}

TEST_F(MappedFile, OnlyRegisteredRangesAreDropped) {
  EXPECT_FALSE(drop_file_pages(base_, kBytes));  // not registered
  register_file_mapping(base_, kBytes);
  EXPECT_FALSE(drop_file_pages(bytes() + 4096, kBytes));  // past the mapping's end
  EXPECT_FALSE(drop_file_pages(base_, 0));
  unregister_file_mapping(base_);
  EXPECT_FALSE(drop_file_pages(base_, kBytes));
  EXPECT_TRUE(reads_the_file());
}

TEST(MappedFileHeap, HeapMemoryIsNeverDropped) {
  std::vector<uint8_t> heap(size_t(1) << 20);
  for (size_t i = 0; i < heap.size(); ++i) heap[i] = pattern(i);
  EXPECT_FALSE(drop_file_pages(heap.data(), heap.size()));
  for (size_t i = 0; i < heap.size(); ++i) ASSERT_EQ(heap[i], pattern(i)) << i;
}

}  // namespace
}  // namespace ingot
