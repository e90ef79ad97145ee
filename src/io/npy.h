// NumPy .npy and .npz files: the tensor format of the CLI (--inputs, --input, --save-outputs)
// and of model fixtures.
//
// .npy: "\x93NUMPY", major, minor, header length (uint16 LE for 1.0, uint32 LE for 2.0/3.0), a
// Python dict literal {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), } padded with
// spaces and ended with '\n', then the raw C-order data.
// .npz: a zip archive of .npy members, stored (np.savez) or deflated (np.savez_compressed).
//
// Read: little- or big-endian f2/f4/f8, i1..i8, u1..u8 and b1, C order. Write: version 1.0
// (2.0 when the header needs it), native little-endian; bfloat16 has no NumPy dtype and is
// written as float32. Every malformed file gives a Status naming the file.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "ingot/status.h"
#include "ingot/tensor.h"

namespace ingot {

Expected<Tensor> read_npy(const std::string& path);
Status write_npy(const std::string& path, const Tensor& t);

// Keys are the member names without ".npy".
Expected<std::map<std::string, Tensor>> read_npz(const std::string& path);
// Members are written in the given order; `compress` deflates them like np.savez_compressed.
Status write_npz(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& tensors,
                 bool compress = false);

// The same on bytes in memory; `name` is used in messages.
Expected<Tensor> parse_npy(const std::string& bytes, const std::string& name);
Expected<std::string> serialize_npy(const Tensor& t);
Expected<std::map<std::string, Tensor>> parse_npz(const std::string& bytes, const std::string& name);
Expected<std::string> serialize_npz(const std::vector<std::pair<std::string, Tensor>>& tensors,
                                    bool compress = false);

}  // namespace ingot
