// Read-only file mappings whose pages the process may hand back to the kernel: an engine file's
// weights are mapped and used in place (plan/engine_file.h), but a backend that keeps its own
// copy of a constant (the CPU's packed weights) never reads the mapped bytes again, and they
// would stay resident all the same: a float32 DistilBERT engine then held its 255 MiB of weights
// twice. Dropping a range of such a mapping is always safe: a later read faults the pages back
// in from the file (the page cache), with the same contents.
#pragma once

#include <cstddef>

namespace ingot {

// Registers [base, base + size), a read-only private file mapping, until unregistered (before
// it is unmapped).
void register_file_mapping(const void* base, size_t size);
void unregister_file_mapping(const void* base);

// Hands back the whole pages of [p, p + n) when the range lies in a registered mapping; false
// (and nothing done) otherwise, e.g. for heap memory, whose pages must not be dropped.
bool drop_file_pages(const void* p, size_t n);

}  // namespace ingot
