// HDF5 C API calls behind Hdf5File. Each hid_t lives in a Handle that closes it, so an nd::Error
// thrown halfway never leaks an HDF5 object (a leaked one would keep the file open).
#include "train/ckpt/hdf5_file.h"

#include <hdf5.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <type_traits>

#include "tensor/checked_size.h"
#include "tensor/error.h"

namespace nd::train {
namespace {

static_assert(std::is_same<hid_t, int64_t>::value, "Hdf5File stores hid_t as int64_t");

class Handle {
 public:
  Handle(hid_t id, herr_t (*closer)(hid_t)) : id_(id), closer_(closer) {}
  ~Handle() {
    if (id_ >= 0) closer_(id_);
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  hid_t get() const { return id_; }
  bool ok() const { return id_ >= 0; }

 private:
  hid_t id_;
  herr_t (*closer_)(hid_t);
};

void silence_hdf5_errors() {
  static bool done = [] {
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    return true;
  }();
  (void)done;
}

std::vector<std::string> split_path(const std::string& object) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= object.size()) {
    size_t slash = object.find('/', start);
    if (slash == std::string::npos) slash = object.size();
    if (slash > start) parts.push_back(object.substr(start, slash - start));
    start = slash + 1;
  }
  return parts;
}

herr_t collect_link_name(hid_t, const char* name, const H5L_info_t*, void* out) {
  static_cast<std::vector<std::string>*>(out)->push_back(name);
  return 0;
}

herr_t collect_attr_name(hid_t, const char* name, const H5A_info_t*, void* out) {
  static_cast<std::vector<std::string>*>(out)->push_back(name);
  return 0;
}

// The caller owns the returned type id (wrap it in a Handle).
hid_t new_vlen_string_type() {
  hid_t type = H5Tcopy(H5T_C_S1);
  H5Tset_size(type, H5T_VARIABLE);
  return type;
}

// Reads a string from a dataset or attribute whose file type is `file_type`; `read(mem_type, buf)`
// does the H5Dread / H5Aread. Handles variable- and fixed-length strings (h5py writes both).
template <typename ReadFn>
std::string read_string_value(hid_t file_type, hid_t space, ReadFn read, const std::string& what) {
  ND_CHECK(H5Tget_class(file_type) == H5T_STRING, what << " is not a string");
  if (H5Tis_variable_str(file_type) > 0) {
    Handle mem(H5Tcopy(H5T_C_S1), H5Tclose);
    H5Tset_size(mem.get(), H5T_VARIABLE);
    char* text = nullptr;
    ND_CHECK(read(mem.get(), &text) >= 0, "cannot read " << what);
    std::string out = text ? text : "";
    H5Dvlen_reclaim(mem.get(), space, H5P_DEFAULT, &text);
    return out;
  }
  size_t size = H5Tget_size(file_type);
  Handle mem(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(mem.get(), size);
  H5Tset_strpad(mem.get(), H5T_STR_NULLPAD);
  std::string out(size, '\0');
  ND_CHECK(read(mem.get(), &out[0]) >= 0, "cannot read " << what);
  out.resize(std::min(out.size(), out.find('\0')));
  return out;
}

}  // namespace

Hdf5File Hdf5File::create(const std::string& path) {
  silence_hdf5_errors();
  hid_t id = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  ND_CHECK_INPUT(id >= 0, "cannot create HDF5 file " << path << " (is the directory writable?)");
  return Hdf5File(id, path);
}

Hdf5File Hdf5File::open_read(const std::string& path) {
  silence_hdf5_errors();
  ND_CHECK_INPUT(std::ifstream(path).good(), "cannot open " << path << ": no such readable file");
  ND_CHECK_INPUT(H5Fis_hdf5(path.c_str()) > 0, path << " is not an HDF5 file");
  hid_t id = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  ND_CHECK_INPUT(id >= 0, "cannot open HDF5 file " << path);
  return Hdf5File(id, path);
}

Hdf5File::Hdf5File(Hdf5File&& other) noexcept : id_(other.id_), path_(std::move(other.path_)) { other.id_ = -1; }

Hdf5File::~Hdf5File() {
  if (id_ >= 0) H5Fclose(id_);
}

void Hdf5File::close() {
  if (id_ < 0) return;
  herr_t status = H5Fclose(id_);
  id_ = -1;
  ND_CHECK(status >= 0, "cannot close HDF5 file " << path_);
}

void Hdf5File::flush() { ND_CHECK(H5Fflush(id_, H5F_SCOPE_GLOBAL) >= 0, "cannot flush HDF5 file " << path_); }

bool Hdf5File::exists(const std::string& object) const {
  std::string prefix;
  for (const std::string& part : split_path(object)) {
    prefix += "/" + part;
    if (H5Lexists(id_, prefix.c_str(), H5P_DEFAULT) <= 0) return false;
  }
  return true;
}

void Hdf5File::create_group(const std::string& group) {
  std::string prefix;
  for (const std::string& part : split_path(group)) {
    prefix += "/" + part;
    if (H5Lexists(id_, prefix.c_str(), H5P_DEFAULT) > 0) continue;
    Handle g(H5Gcreate2(id_, prefix.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose);
    ND_CHECK(g.ok(), "cannot create group " << prefix << " in " << path_);
  }
}

void Hdf5File::ensure_parent_groups(const std::string& object) {
  size_t slash = object.find_last_of('/');
  if (slash != std::string::npos && slash > 0) create_group(object.substr(0, slash));
}

std::vector<std::string> Hdf5File::list(const std::string& group) const {
  ND_CHECK_INPUT(exists(group), path_ << " has no group " << group);
  Handle g(H5Gopen2(id_, group.c_str(), H5P_DEFAULT), H5Gclose);
  ND_CHECK(g.ok(), "cannot open group " << group << " in " << path_);
  std::vector<std::string> names;
  ND_CHECK(H5Literate(g.get(), H5_INDEX_NAME, H5_ITER_INC, nullptr, collect_link_name, &names) >= 0,
           "cannot list group " << group << " in " << path_);
  std::sort(names.begin(), names.end());
  return names;
}

Shape Hdf5File::dataset_shape(const std::string& object) const {
  ND_CHECK_INPUT(exists(object), path_ << " has no dataset " << object);
  Handle ds(H5Dopen2(id_, object.c_str(), H5P_DEFAULT), H5Dclose);
  ND_CHECK(ds.ok(), path_ << ": " << object << " is not a dataset");
  Handle space(H5Dget_space(ds.get()), H5Sclose);
  int rank = H5Sget_simple_extent_ndims(space.get());
  ND_CHECK(rank >= 0, "cannot read the shape of " << object << " in " << path_);
  std::vector<hsize_t> dims(static_cast<size_t>(rank));
  if (rank > 0) H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
  Shape shape;
  for (hsize_t d : dims) {
    ND_CHECK_INPUT(d <= static_cast<hsize_t>(INT64_MAX), path_ << ": " << object << " has a dimension of " << d);
    shape.push_back(static_cast<int64_t>(d));
  }
  checked_numel(shape, path_ + ": " + object);
  return shape;
}

Tensor Hdf5File::read_tensor(const std::string& object) const {
  Shape shape = dataset_shape(object);
  Handle ds(H5Dopen2(id_, object.c_str(), H5P_DEFAULT), H5Dclose);
  Handle type(H5Dget_type(ds.get()), H5Tclose);
  H5T_class_t cls = H5Tget_class(type.get());
  ND_CHECK(cls == H5T_FLOAT || cls == H5T_INTEGER, object << " in " << path_ << " is not a numeric dataset");
  bool is_int = cls == H5T_INTEGER;
  // We store datasets whole and uncompressed: a shape larger than the bytes on disk is a damaged or
  // foreign file, refused before memory is set aside for it. (A virtual dataset, an index's view
  // of its parts, takes its bytes from other files.)
  Handle dcpl(H5Dget_create_plist(ds.get()), H5Pclose);
  if (H5Pget_layout(dcpl.get()) != H5D_VIRTUAL) {
    const int64_t stored = static_cast<int64_t>(H5Dget_storage_size(ds.get()));
    const int64_t need = checked_mul(checked_numel(shape, path_ + ": " + object), 4, path_ + ": " + object);
    ND_CHECK_INPUT(stored >= need, path_ << ": " << object << " stores " << stored << " bytes, its shape "
                                        << shape_str(shape) << " needs " << need);
  }
  Tensor out = Tensor::empty(shape, is_int ? DType::I32 : DType::F32);
  if (out.numel() > 0)
    ND_CHECK(H5Dread(ds.get(), is_int ? H5T_NATIVE_INT32 : H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT,
                     out.raw_data()) >= 0,
             "cannot read dataset " << object << " from " << path_);
  return out;
}

void Hdf5File::write_string(const std::string& object, const std::string& text) {
  ND_CHECK(text.find('\0') == std::string::npos, "string for " << object << " holds a NUL byte");
  ensure_parent_groups(object);
  Handle type(new_vlen_string_type(), H5Tclose);
  Handle space(H5Screate(H5S_SCALAR), H5Sclose);
  Handle ds(H5Dcreate2(id_, object.c_str(), type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Dclose);
  ND_CHECK(ds.ok(), "cannot create dataset " << object << " in " << path_);
  const char* p = text.c_str();
  ND_CHECK(H5Dwrite(ds.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, &p) >= 0,
           "cannot write " << object << " to " << path_);
}

std::string Hdf5File::read_string(const std::string& object) const {
  ND_CHECK_INPUT(exists(object), path_ << " has no dataset " << object);
  Handle ds(H5Dopen2(id_, object.c_str(), H5P_DEFAULT), H5Dclose);
  ND_CHECK(ds.ok(), path_ << ": " << object << " is not a dataset");
  Handle type(H5Dget_type(ds.get()), H5Tclose);
  Handle space(H5Dget_space(ds.get()), H5Sclose);
  return read_string_value(
      type.get(), space.get(),
      [&](hid_t mem, void* buf) { return H5Dread(ds.get(), mem, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf); },
      object + " in " + path_);
}

void Hdf5File::set_attr(const std::string& object, const std::string& name, const AttrValue& value) {
  if (!exists(object)) create_group(object);
  Handle obj(H5Oopen(id_, object.c_str(), H5P_DEFAULT), H5Oclose);
  ND_CHECK(obj.ok(), "cannot open " << object << " in " << path_);
  if (H5Aexists(obj.get(), name.c_str()) > 0) H5Adelete(obj.get(), name.c_str());
  Handle space(H5Screate(H5S_SCALAR), H5Sclose);
  herr_t status = -1;
  if (const int64_t* i = std::get_if<int64_t>(&value)) {
    Handle a(H5Acreate2(obj.get(), name.c_str(), H5T_STD_I64LE, space.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
    if (a.ok()) status = H5Awrite(a.get(), H5T_NATIVE_INT64, i);
  } else if (const double* d = std::get_if<double>(&value)) {
    Handle a(H5Acreate2(obj.get(), name.c_str(), H5T_IEEE_F64LE, space.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
    if (a.ok()) status = H5Awrite(a.get(), H5T_NATIVE_DOUBLE, d);
  } else {
    const std::string& s = std::get<std::string>(value);
    Handle type(new_vlen_string_type(), H5Tclose);
    const char* p = s.c_str();
    Handle a(H5Acreate2(obj.get(), name.c_str(), type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
    if (a.ok()) status = H5Awrite(a.get(), type.get(), &p);
  }
  ND_CHECK(status >= 0, "cannot write attribute " << name << " of " << object << " in " << path_);
}

bool Hdf5File::has_attr(const std::string& object, const std::string& name) const {
  if (!exists(object)) return false;
  return H5Aexists_by_name(id_, object.c_str(), name.c_str(), H5P_DEFAULT) > 0;
}

std::vector<std::string> Hdf5File::attr_names(const std::string& object) const {
  ND_CHECK_INPUT(exists(object), path_ << " has no object " << object);
  Handle obj(H5Oopen(id_, object.c_str(), H5P_DEFAULT), H5Oclose);
  std::vector<std::string> names;
  hsize_t index = 0;
  ND_CHECK(H5Aiterate2(obj.get(), H5_INDEX_NAME, H5_ITER_INC, &index, collect_attr_name, &names) >= 0,
           "cannot list the attributes of " << object << " in " << path_);
  return names;
}

AttrValue Hdf5File::attr(const std::string& object, const std::string& name) const {
  ND_CHECK_INPUT(has_attr(object, name), path_ << " has no attribute " << object << "." << name);
  Handle a(H5Aopen_by_name(id_, object.c_str(), name.c_str(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  Handle type(H5Aget_type(a.get()), H5Tclose);
  Handle space(H5Aget_space(a.get()), H5Sclose);
  ND_CHECK(H5Sget_simple_extent_npoints(space.get()) == 1,
           "attribute " << object << "." << name << " in " << path_ << " is not a scalar");
  std::string what = "attribute " + object + "." + name + " in " + path_;
  switch (H5Tget_class(type.get())) {
    case H5T_INTEGER: {
      int64_t v = 0;
      ND_CHECK(H5Aread(a.get(), H5T_NATIVE_INT64, &v) >= 0, "cannot read " << what);
      return v;
    }
    case H5T_FLOAT: {
      double v = 0;
      ND_CHECK(H5Aread(a.get(), H5T_NATIVE_DOUBLE, &v) >= 0, "cannot read " << what);
      return v;
    }
    case H5T_STRING:
      return read_string_value(
          type.get(), space.get(), [&](hid_t mem, void* buf) { return H5Aread(a.get(), mem, buf); }, what);
    default: ND_FAIL(what << " has an unsupported type");
  }
}

int64_t Hdf5File::attr_int(const std::string& object, const std::string& name) const {
  AttrValue v = attr(object, name);
  ND_CHECK(std::holds_alternative<int64_t>(v), "attribute " << object << "." << name << " in " << path_
                                                              << " is not an integer");
  return std::get<int64_t>(v);
}

double Hdf5File::attr_double(const std::string& object, const std::string& name) const {
  AttrValue v = attr(object, name);
  if (const int64_t* i = std::get_if<int64_t>(&v)) return static_cast<double>(*i);
  ND_CHECK(std::holds_alternative<double>(v), "attribute " << object << "." << name << " in " << path_
                                                             << " is not a number");
  return std::get<double>(v);
}

std::string Hdf5File::attr_string(const std::string& object, const std::string& name) const {
  AttrValue v = attr(object, name);
  ND_CHECK(std::holds_alternative<std::string>(v), "attribute " << object << "." << name << " in " << path_
                                                                  << " is not a string");
  return std::get<std::string>(v);
}

}  // namespace nd::train
