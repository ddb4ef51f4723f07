// A small RAII layer over the HDF5 C API for checkpoints: f32 / i64 datasets of full shape,
// scalar string datasets, and scalar attributes (int, float, string), all readable with h5py.
// Every failure is an nd::Error naming the file and the object; HDF5's own stack printing is off.
#pragma once
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "tensor/tensor.h"

namespace nd::train {

using AttrValue = std::variant<int64_t, double, std::string>;

class Hdf5File {
 public:
  static Hdf5File create(const std::string& path);     // truncates an existing file
  static Hdf5File open_read(const std::string& path);  // nd::Error if missing or not HDF5
  Hdf5File(Hdf5File&& other) noexcept;
  Hdf5File& operator=(Hdf5File&&) = delete;
  Hdf5File(const Hdf5File&) = delete;
  ~Hdf5File();

  const std::string& path() const { return path_; }
  int64_t id() const { return id_; }  // the hid_t, for the HDF5 calls this class does not wrap

  // Object paths are absolute ("/params/transformer.wte.weight"); missing groups are created.
  void create_group(const std::string& group);
  bool exists(const std::string& object) const;
  std::vector<std::string> list(const std::string& group) const;  // member names, sorted

  Tensor read_tensor(const std::string& object) const;  // f32 or i32 on the CPU
  Shape dataset_shape(const std::string& object) const;

  void write_string(const std::string& object, const std::string& text);
  std::string read_string(const std::string& object) const;

  void set_attr(const std::string& object, const std::string& name, const AttrValue& value);
  bool has_attr(const std::string& object, const std::string& name) const;
  AttrValue attr(const std::string& object, const std::string& name) const;
  std::vector<std::string> attr_names(const std::string& object) const;
  int64_t attr_int(const std::string& object, const std::string& name) const;
  double attr_double(const std::string& object, const std::string& name) const;  // ints convert
  std::string attr_string(const std::string& object, const std::string& name) const;

  void flush();  // H5Fflush: everything written so far reaches the OS
  void close();  // idempotent

 private:
  Hdf5File(int64_t id, std::string path) : id_(id), path_(std::move(path)) {}
  void ensure_parent_groups(const std::string& object);
  int64_t id_ = -1;  // hid_t
  std::string path_;
};

}  // namespace nd::train
