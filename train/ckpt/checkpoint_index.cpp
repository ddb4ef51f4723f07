// The index file: metadata, the slice table, the virtual datasets; and reading a checkpoint back
// through it (or through an older single-file checkpoint's own datasets).
#include "train/ckpt/checkpoint_index.h"

#include <fcntl.h>
#include <hdf5.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <sstream>

#include "tensor/checked_size.h"
#include "tensor/error.h"
#include "train/ckpt/checksum.h"

namespace nd::train {

const char* const kCheckpointGroups[3] = {"params", "optimizer/m", "optimizer/v"};

namespace {

const char* kStateGroup = "/state";
const char* kFormat = "nanodist-sharded-1";

struct H5Id {
  hid_t id;
  herr_t (*close)(hid_t);
  ~H5Id() {
    if (id >= 0) close(id);
  }
};

std::string directory_of(const std::string& path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
}

void fsync_path(const std::string& path, int flags) {
  int fd = ::open(path.c_str(), flags | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

void write_meta(Hdf5File& file, const CheckpointData& data) {
  file.create_group("/config");
  for (const auto& [name, value] : data.config) file.set_attr("/config", name, value);
  const CheckpointState& s = data.state;
  file.create_group(kStateGroup);
  file.set_attr(kStateGroup, "step", s.step);
  file.set_attr(kStateGroup, "optimizer_step", s.optimizer_step);
  file.set_attr(kStateGroup, "dropout_seed", static_cast<int64_t>(s.dropout_seed));
  file.set_attr(kStateGroup, "dropout_stream", static_cast<int64_t>(s.dropout_stream));
  file.set_attr(kStateGroup, "dropout_offset", static_cast<int64_t>(s.dropout_offset));
  file.set_attr(kStateGroup, "data_step", static_cast<int64_t>(s.data_step));
  file.set_attr(kStateGroup, "world_size", s.world_size);
  file.set_attr(kStateGroup, "best_val_loss", s.best_val_loss);
  file.set_attr(kStateGroup, "tokens", s.tokens);
  file.set_attr(kStateGroup, "loss_scale", s.loss_scale);
  file.set_attr(kStateGroup, "loss_scale_finite_steps", s.loss_scale_finite_steps);
  file.set_attr(kStateGroup, "overflow_skips", s.overflow_skips);
  file.write_string("/tokenizer", data.tokenizer_text);
}

CheckpointData read_meta(const Hdf5File& file) {
  CheckpointData data;
  for (const std::string& name : file.attr_names("/config")) data.config.emplace_back(name, file.attr("/config", name));
  CheckpointState& s = data.state;
  s.step = file.attr_int(kStateGroup, "step");
  s.optimizer_step = file.attr_int(kStateGroup, "optimizer_step");
  s.dropout_seed = static_cast<uint64_t>(file.attr_int(kStateGroup, "dropout_seed"));
  s.dropout_stream = static_cast<uint64_t>(file.attr_int(kStateGroup, "dropout_stream"));
  s.dropout_offset = static_cast<uint64_t>(file.attr_int(kStateGroup, "dropout_offset"));
  s.data_step = static_cast<uint64_t>(file.attr_int(kStateGroup, "data_step"));
  s.world_size = file.attr_int(kStateGroup, "world_size");
  s.best_val_loss = file.attr_double(kStateGroup, "best_val_loss");
  s.tokens = file.attr_int(kStateGroup, "tokens");
  if (file.has_attr(kStateGroup, "loss_scale")) {  // checkpoints from before the loss scaler lack them
    s.loss_scale = file.attr_double(kStateGroup, "loss_scale");
    s.loss_scale_finite_steps = file.attr_int(kStateGroup, "loss_scale_finite_steps");
    s.overflow_skips = file.attr_int(kStateGroup, "overflow_skips");
  }
  data.tokenizer_text = file.read_string("/tokenizer");
  return data;
}

// A full-shape f32 virtual dataset at `object` whose slices come from the part files.
void create_virtual_dataset(hid_t file, const std::string& object, const std::vector<int64_t>& full_shape,
                            const std::vector<const SliceRecord*>& slices) {
  std::vector<hsize_t> dims(full_shape.begin(), full_shape.end());
  H5Id vspace{H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr), H5Sclose};
  H5Id dcpl{H5Pcreate(H5P_DATASET_CREATE), H5Pclose};
  const float zero = 0.0f;
  H5Pset_fill_value(dcpl.id, H5T_NATIVE_FLOAT, &zero);
  for (const SliceRecord* r : slices) {
    std::vector<hsize_t> start(r->box.offset.begin(), r->box.offset.end()), count(r->box.count.begin(), r->box.count.end());
    H5Id src{H5Screate_simple(static_cast<int>(count.size()), count.data(), nullptr), H5Sclose};
    ND_CHECK(H5Sselect_hyperslab(vspace.id, H5S_SELECT_SET, start.data(), nullptr, count.data(), nullptr) >= 0 &&
                 H5Pset_virtual(dcpl.id, vspace.id, r->part.c_str(), r->dataset.c_str(), src.id) >= 0,
             "cannot map " << r->dataset << " of " << r->part << " into " << object);
  }
  H5Id space{H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr), H5Sclose};
  H5Id lcpl{H5Pcreate(H5P_LINK_CREATE), H5Pclose};
  H5Pset_create_intermediate_group(lcpl.id, 1);
  H5Id dset{H5Dcreate2(file, object.c_str(), H5T_IEEE_F32LE, space.id, lcpl.id, dcpl.id, H5P_DEFAULT), H5Dclose};
  ND_CHECK(dset.id >= 0, "cannot create the virtual dataset " << object);
}

std::string key_of(const std::string& group, const std::string& name) { return group + "/" + name; }

}  // namespace

int64_t write_checkpoint_index(const std::string& index_path, int parts, const CheckpointData& meta) {
  std::vector<SliceRecord> records;
  for (int rank = 0; rank < parts; ++rank) {
    std::vector<SliceRecord> part = read_part_manifest(index_path, rank);
    records.insert(records.end(), part.begin(), part.end());
  }
  // The parts of one save come from one binary: their slices' checksums are all of one kind.
  const bool chunked = !records.empty() && records.front().chunked_checksum;
  for (const SliceRecord& r : records)
    ND_CHECK_INPUT(r.chunked_checksum == chunked, index_path << ": its parts disagree on the slice checksum");
  std::string table;
  std::map<std::string, std::vector<const SliceRecord*>> by_tensor;
  int64_t bytes = 0;
  for (const SliceRecord& r : records) {
    bytes += r.box.numel() * 4;
    table += record_line(r) + "\n";
    by_tensor[key_of(r.group, r.name)].push_back(&r);
  }
  const std::string temp = directory_of(index_path) + "/." + std::filesystem::path(index_path).filename().string() +
                           ".tmp." + std::to_string(::getpid());
  try {
    {
      Hdf5File file = Hdf5File::create(temp);
      write_meta(file, meta);
      file.write_string("/slices", table);
      file.create_group("/checkpoint");
      file.set_attr("/checkpoint", "format", std::string(kFormat));
      file.set_attr("/checkpoint", "parts", static_cast<int64_t>(parts));
      file.set_attr("/checkpoint", "slices_checksum", static_cast<int64_t>(checksum64(table.data(), table.size())));
      if (chunked) file.set_attr("/checkpoint", kChecksumAttribute, std::string(kChunkedChecksum));
      for (const auto& [key, slices] : by_tensor)
        create_virtual_dataset(file.id(), "/" + key, slices.front()->full_shape, slices);
      file.close();
    }
    fsync_path(temp, O_RDONLY);
    ND_CHECK_INPUT(std::rename(temp.c_str(), index_path.c_str()) == 0,
                   "cannot rename " << temp << " to " << index_path << ": " << std::strerror(errno));
    fsync_path(directory_of(index_path), O_RDONLY | O_DIRECTORY);
  } catch (const Error& e) {
    ::unlink(temp.c_str());
    ND_FAIL_INPUT("cannot write checkpoint index " << index_path << ": " << e.message());
  }
  return bytes;
}

void remove_checkpoint(const std::string& index_path) {
  ND_CHECK(::unlink(index_path.c_str()) == 0 || errno == ENOENT,
           "cannot remove checkpoint " << index_path << ": " << std::strerror(errno));
  std::error_code ec;
  std::filesystem::remove_all(parts_directory(index_path), ec);
  ND_CHECK(!ec, "cannot remove " << parts_directory(index_path) << ": " << ec.message());
}

CheckpointReader::CheckpointReader(const std::string& path) : path_(path) {
  auto file = std::make_unique<Hdf5File>(Hdf5File::open_read(path));
  for (const char* group : {"/config", "/state", "/tokenizer"})
    ND_CHECK_INPUT(file->exists(group), path << " is not a nanodist checkpoint: it has no " << group);
  meta_ = read_meta(*file);
  if (file->exists("/slices")) {
    const std::string table = file->read_string("/slices");
    ND_CHECK_INPUT(file->exists("/checkpoint") &&
                       file->attr_int("/checkpoint", "slices_checksum") ==
                           static_cast<int64_t>(checksum64(table.data(), table.size())),
                   path << " is corrupt: its slice table does not match its checksum");
    bool chunked = false;  // no attribute: a checkpoint written before chunked checksums
    if (file->has_attr("/checkpoint", kChecksumAttribute)) {
      const std::string kind = file->attr_string("/checkpoint", kChecksumAttribute);
      ND_CHECK_INPUT(kind == kChunkedChecksum, path << ": unknown slice checksum '" << kind << "'");
      chunked = true;
    }
    std::istringstream lines(table);
    std::string line;
    std::map<std::string, int64_t> elements;  // per tensor, over its slices
    while (std::getline(lines, line)) {
      if (line.empty()) continue;
      SliceRecord r = parse_record_line(line, path);
      r.chunked_checksum = chunked;
      const std::string key = key_of(r.group, r.name);
      Slices& s = tensors_[key];
      ND_CHECK_INPUT(s.records.empty() || s.full_shape == r.full_shape,
                     path << " is corrupt: the slices of /" << key << " disagree on its shape");
      s.full_shape = r.full_shape;
      elements[key] = checked_add(elements[key], r.box.numel(), path + ": /" + key);
      s.records.push_back(std::move(r));
    }
    // Each element is written by one rank: the slices add up to the tensor, so its size is
    // bounded by the parts' bytes (read_full checks those before allocating).
    for (const auto& [key, s] : tensors_)
      ND_CHECK_INPUT(elements[key] == checked_numel(s.full_shape, path + ": /" + key),
                     path << " is corrupt: the slices of /" << key << " hold " << elements[key] << " elements, its shape "
                          << dims_str(s.full_shape) << " has " << checked_numel(s.full_shape, key));
    parts_ = std::make_unique<PartReader>(directory_of(path));
    return;
  }
  for (const char* group : kCheckpointGroups) {
    ND_CHECK_INPUT(file->exists(std::string("/") + group), path << " is not a nanodist checkpoint: it has no /" << group);
    for (const std::string& name : file->list(std::string("/") + group)) {
      Shape shape = file->dataset_shape(std::string("/") + group + "/" + name);
      tensors_[key_of(group, name)].full_shape = std::vector<int64_t>(shape.begin(), shape.end());
    }
  }
  unsharded_ = std::move(file);
}

CheckpointReader::~CheckpointReader() = default;

std::vector<std::string> CheckpointReader::names(const std::string& group) const {
  std::vector<std::string> out;
  const std::string prefix = group + "/";
  for (const auto& [key, slices] : tensors_) {
    if (key.compare(0, prefix.size(), prefix) != 0) continue;
    std::string name = key.substr(prefix.size());
    if (name.find('/') == std::string::npos) out.push_back(name);
  }
  return out;
}

bool CheckpointReader::has(const std::string& group, const std::string& name) const {
  return tensors_.count(key_of(group, name)) > 0;
}

std::vector<int64_t> CheckpointReader::full_shape(const std::string& group, const std::string& name) const {
  auto it = tensors_.find(key_of(group, name));
  ND_CHECK_INPUT(it != tensors_.end(), path_ << " has no /" << group << "/" << name);
  return it->second.full_shape;
}

void CheckpointReader::read_box(const std::string& group, const std::string& name, const Hyperslab& box, float* out) {
  auto it = tensors_.find(key_of(group, name));
  ND_CHECK_INPUT(it != tensors_.end(), path_ << " has no /" << group << "/" << name);
  const Slices& s = it->second;
  if (unsharded_) {
    Tensor full = unsharded_->read_tensor("/" + key_of(group, name));
    ND_CHECK_INPUT(full.dtype() == DType::F32, path_ << ": /" << group << "/" << name << " is not f32");
    copy_box(static_cast<const char*>(full.raw_data()), s.full_shape, box.offset, reinterpret_cast<char*>(out),
             box.count, std::vector<int64_t>(box.count.size(), 0), box.count, sizeof(float));
    return;
  }
  int64_t covered = 0;
  for (const SliceRecord& r : s.records) {
    Hyperslab common = intersect(r.box, box);
    if (common.empty()) continue;
    const std::string cache_key = r.part + ":" + r.dataset;
    if (cached_ != cache_key) {
      cached_.clear();
      parts_->check_extent(r);
      cached_data_.resize(static_cast<size_t>(r.box.numel()));
      parts_->read(r, cached_data_.data());
      cached_ = cache_key;
    }
    std::vector<int64_t> src_start(box.offset.size()), dst_start(box.offset.size());
    for (size_t d = 0; d < box.offset.size(); ++d) {
      src_start[d] = common.offset[d] - r.box.offset[d];
      dst_start[d] = common.offset[d] - box.offset[d];
    }
    copy_box(reinterpret_cast<const char*>(cached_data_.data()), r.box.count, src_start, reinterpret_cast<char*>(out),
             box.count, dst_start, common.count, sizeof(float));
    covered += common.numel();
  }
  ND_CHECK_INPUT(covered == box.numel(), path_ << " is incomplete: its slices of /" << group << "/" << name << " cover "
                                               << covered << " of the " << box.numel() << " elements asked for");
}

Tensor CheckpointReader::read_full(const std::string& group, const std::string& name) {
  std::vector<int64_t> shape = full_shape(group, name);
  if (parts_)
    for (const SliceRecord& r : tensors_.at(key_of(group, name)).records) parts_->check_extent(r);
  Tensor out = Tensor::empty(Shape(shape.begin(), shape.end()), DType::F32, Device::cpu());
  read_box(group, name, whole(shape), out.data<float>());
  return out;
}

}  // namespace nd::train
