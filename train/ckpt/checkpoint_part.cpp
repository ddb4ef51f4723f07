// Part files: HDF5 metadata (datasets allocated early, never filled, page-aligned), then the
// slices' bytes chunk by chunk by pwrite at the allocated offsets (their whole pages directly where
// the buffer is page-aligned: direct_write.h), each slice's checksum taken on the way, then
// /manifest, fsync, rename. Reading takes the bytes back by pread and checks each slice's checksum.
#include "train/ckpt/checkpoint_part.h"

#include <fcntl.h>
#include <hdf5.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <set>
#include <sstream>

#include "tensor/checked_size.h"
#include "tensor/error.h"
#include "train/ckpt/checksum.h"
#include "train/ckpt/direct_write.h"

namespace nd::train {
namespace {

// Closes an HDF5 id when it goes out of scope.
struct H5Id {
  hid_t id;
  herr_t (*close)(hid_t);
  ~H5Id() {
    if (id >= 0) close(id);
  }
};

std::string errno_text() { return std::strerror(errno); }

std::string directory_of(const std::string& path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
}

// OUT/ckpt_000250.h5 -> ckpt_000250
std::string stem_of(const std::string& index_path) {
  size_t slash = index_path.find_last_of('/');
  std::string name = slash == std::string::npos ? index_path : index_path.substr(slash + 1);
  if (name.size() > 3 && name.compare(name.size() - 3, 3, ".h5") == 0) name.resize(name.size() - 3);
  return name;
}

std::string rank_file(int rank) {
  char name[32];
  std::snprintf(name, sizeof(name), "rank_%05d.h5", rank);
  return name;
}

void fsync_path(const std::string& path, int flags) {
  int fd = ::open(path.c_str(), flags | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

// A clear error before any byte is written when the part cannot fit: the file-size limit
// (ulimit -f, whose SIGXFSZ would otherwise kill the process) or the free space of the disk.
void check_room(const std::string& dir, uint64_t bytes, const std::string& what) {
  struct rlimit limit;
  if (::getrlimit(RLIMIT_FSIZE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY)
    ND_CHECK_INPUT(bytes <= limit.rlim_cur, what << " needs " << bytes << " bytes, over the file-size limit (ulimit -f) of "
                                                 << limit.rlim_cur << " bytes");
  struct statvfs fs;
  if (::statvfs(dir.c_str(), &fs) == 0) {
    const uint64_t free_bytes = static_cast<uint64_t>(fs.f_bavail) * fs.f_frsize;
    ND_CHECK_INPUT(bytes <= free_bytes, what << " needs " << bytes << " bytes, only " << free_bytes << " are free on "
                                             << dir << " (disk full)");
  }
}

void write_all(int fd, const char* p, size_t n, int64_t offset, const std::string& path) {
  while (n > 0) {
    ssize_t w = ::pwrite(fd, p, n, offset);
    if (w < 0 && errno == EINTR) continue;
    ND_CHECK_INPUT(w > 0, "cannot write " << path << ": " << errno_text());
    p += w;
    n -= static_cast<size_t>(w);
    offset += w;
  }
}

// Creates the part's HDF5 structure at `path`: one contiguous f32 dataset per slice, allocated
// but never filled; sets each record's file_offset. /manifest comes after the bytes (their
// checksums are taken as they are written): add_manifest.
void write_part_metadata(const std::string& path, std::vector<SliceRecord>& records, const std::string& rel) {
  // Every object of a page or more starts on a page, so the slices' bytes can be written directly.
  H5Id fapl{H5Pcreate(H5P_FILE_ACCESS), H5Pclose};
  H5Pset_alignment(fapl.id, DirectWriter::kAlign, DirectWriter::kAlign);
  H5Id file{H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.id), H5Fclose};
  ND_CHECK_INPUT(file.id >= 0, "cannot create " << path);
  // No modification times in object headers: the same slices always make the same bytes (so an
  // asynchronous and a synchronous save write identical files).
  H5Id gcpl{H5Pcreate(H5P_GROUP_CREATE), H5Pclose};
  H5Pset_obj_track_times(gcpl.id, 0);
  // The tensors' groups, and those of any other slices (the FP8 state's /state/fp8/...), parents first.
  std::set<std::string> groups{"/params", "/optimizer", "/optimizer/m", "/optimizer/v"};
  for (const SliceRecord& r : records) {
    for (size_t slash = r.group.find('/'); slash != std::string::npos; slash = r.group.find('/', slash + 1))
      groups.insert("/" + r.group.substr(0, slash));
    groups.insert("/" + r.group);
  }
  for (const std::string& group : groups) {
    H5Id g{H5Gcreate2(file.id, group.c_str(), H5P_DEFAULT, gcpl.id, H5P_DEFAULT), H5Gclose};
    ND_CHECK_INPUT(g.id >= 0, "cannot create group " << group << " in " << path);
  }
  H5Id lcpl{H5Pcreate(H5P_LINK_CREATE), H5Pclose};
  H5Id dcpl{H5Pcreate(H5P_DATASET_CREATE), H5Pclose};
  H5Pset_obj_track_times(dcpl.id, 0);
  H5Pset_layout(dcpl.id, H5D_CONTIGUOUS);
  H5Pset_alloc_time(dcpl.id, H5D_ALLOC_TIME_EARLY);
  H5Pset_fill_time(dcpl.id, H5D_FILL_TIME_NEVER);
  for (SliceRecord& r : records) {
    std::vector<hsize_t> dims(r.box.count.begin(), r.box.count.end());
    H5Id space{dims.empty() ? H5Screate(H5S_SCALAR) : H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr),
               H5Sclose};
    H5Id dset{H5Dcreate2(file.id, r.dataset.c_str(), H5T_IEEE_F32LE, space.id, lcpl.id, dcpl.id, H5P_DEFAULT), H5Dclose};
    ND_CHECK_INPUT(dset.id >= 0, "cannot create dataset " << r.dataset << " in " << path);
    haddr_t at = H5Dget_offset(dset.id);
    ND_CHECK(at != HADDR_UNDEF, "no storage allocated for " << r.dataset << " in " << path);
    r.file_offset = static_cast<int64_t>(at);
    r.part = rel;
  }
  hid_t id = file.id;
  file.id = -1;
  ND_CHECK_INPUT(H5Fclose(id) >= 0, "cannot close " << path);
}

void set_string_attribute(hid_t object, const char* name, const std::string& value, const std::string& path) {
  H5Id type{H5Tcopy(H5T_C_S1), H5Tclose};
  H5Tset_size(type.id, value.size());
  H5Id scalar{H5Screate(H5S_SCALAR), H5Sclose};
  H5Id attr{H5Acreate2(object, name, type.id, scalar.id, H5P_DEFAULT, H5P_DEFAULT), H5Aclose};
  ND_CHECK_INPUT(attr.id >= 0 && H5Awrite(attr.id, type.id, value.data()) >= 0,
                 "cannot write attribute " << name << " of the manifest of " << path);
}

// Adds /manifest (the records with their checksums) to the part at `path`.
// With `chunked`, the attribute kChecksumAttribute says the checksums are kChunkedChecksum.
void add_manifest(const std::string& path, const std::vector<SliceRecord>& records, bool chunked) {
  std::string manifest;
  for (const SliceRecord& r : records) manifest += record_line(r) + "\n";
  H5Id fapl{H5Pcreate(H5P_FILE_ACCESS), H5Pclose};
  H5Pset_alignment(fapl.id, DirectWriter::kAlign, DirectWriter::kAlign);
  H5Id file{H5Fopen(path.c_str(), H5F_ACC_RDWR, fapl.id), H5Fclose};
  ND_CHECK_INPUT(file.id >= 0, "cannot reopen " << path);
  H5Id text_type{H5Tcopy(H5T_C_S1), H5Tclose};
  H5Tset_size(text_type.id, H5T_VARIABLE);
  H5Id scalar{H5Screate(H5S_SCALAR), H5Sclose};
  H5Id text_dcpl{H5Pcreate(H5P_DATASET_CREATE), H5Pclose};
  H5Pset_obj_track_times(text_dcpl.id, 0);
  H5Id dset{H5Dcreate2(file.id, "/manifest", text_type.id, scalar.id, H5P_DEFAULT, text_dcpl.id, H5P_DEFAULT), H5Dclose};
  const char* text = manifest.c_str();
  ND_CHECK_INPUT(dset.id >= 0 && H5Dwrite(dset.id, text_type.id, H5S_ALL, H5S_ALL, H5P_DEFAULT, &text) >= 0,
                 "cannot write the manifest of " << path);
  if (chunked) set_string_attribute(dset.id, kChecksumAttribute, kChunkedChecksum, path);
  H5Dclose(dset.id);
  dset.id = -1;
  hid_t id = file.id;
  file.id = -1;
  ND_CHECK_INPUT(H5Fclose(id) >= 0, "cannot close " << path);
}

// Chunks per write: 8 MiB writes cost a direct-I/O writer about half the system time of 1 MiB
// ones and keep more of the disk busy.
constexpr size_t kChunksPerWrite = 8;

// Tests only: write checksums the way older checkpoints did (no attribute).
std::atomic<bool> g_legacy_checksums{false};

// Writes a slice's bytes at its record's offset (their whole pages directly), kChunksPerWrite
// checksum chunks a write, and returns the chunks' checksums.
std::vector<uint64_t> write_slice(int fd, DirectWriter& direct, const OwnedSlice& slice, const SliceRecord& record,
                                  const std::string& path) {
  const size_t total = static_cast<size_t>(slice.box.numel()) * sizeof(float);
  const char* data = reinterpret_cast<const char*>(slice.data);
  std::vector<uint64_t> sums;
  for (size_t at = 0; at < total; at += kChunksPerWrite * kChecksumChunkBytes) {
    const size_t bytes = std::min(kChunksPerWrite * kChecksumChunkBytes, total - at);
    for (size_t c = 0; c < bytes; c += kChecksumChunkBytes)
      sums.push_back(checksum64(data + at + c, std::min(kChecksumChunkBytes, bytes - c)));
    const int64_t offset = record.file_offset + static_cast<int64_t>(at);
    const size_t done = direct.write_pages(data + at, bytes, offset);
    write_all(fd, data + at + done, bytes - done, offset + static_cast<int64_t>(done), path);
  }
  return sums;
}

}  // namespace

void set_legacy_checksums_for_testing(bool on) { g_legacy_checksums = on; }

std::string parts_directory(const std::string& index_path) {
  return directory_of(index_path) + "/" + stem_of(index_path) + ".parts";
}

std::string part_file_name(const std::string& index_path, int rank) {
  return stem_of(index_path) + ".parts/" + rank_file(rank);
}

std::vector<SliceRecord> write_checkpoint_part(const std::string& index_path, int rank,
                                               const std::vector<OwnedSlice>& slices) {
  // With SIGXFSZ ignored, a write past the file-size limit fails with EFBIG instead of killing us.
  std::signal(SIGXFSZ, SIG_IGN);
  const std::string dir = parts_directory(index_path);
  const std::string rel = part_file_name(index_path, rank);
  const std::string final_path = directory_of(index_path) + "/" + rel;
  const std::string temp = dir + "/." + rank_file(rank) + ".tmp." + std::to_string(::getpid());
  std::vector<SliceRecord> records;
  try {
    ND_CHECK_INPUT(::mkdir(dir.c_str(), 0755) == 0 || errno == EEXIST, "cannot create " << dir << ": " << errno_text());
    uint64_t bytes = 1 << 16;  // HDF5's metadata, roughly
    for (size_t k = 0; k < slices.size(); ++k) {
      const OwnedSlice& s = slices[k];
      SliceRecord r;
      r.group = s.group;
      r.name = s.name;
      r.dataset = "/" + s.group + "/" + s.name + "#" + std::to_string(k);
      r.full_shape = s.full_shape;
      r.box = s.box;
      bytes += static_cast<uint64_t>(s.box.numel()) * sizeof(float) + 256;
      records.push_back(std::move(r));
    }
    check_room(dir, bytes, "checkpoint part " + final_path);
    write_part_metadata(temp, records, rel);
    int fd = ::open(temp.c_str(), O_WRONLY | O_CLOEXEC);
    ND_CHECK_INPUT(fd >= 0, "cannot open " << temp << ": " << errno_text());
    try {
      DirectWriter direct(temp);  // the aligned pages of each slice; the rest through fd
      const bool legacy = g_legacy_checksums.load();
      for (size_t k = 0; k < slices.size(); ++k) {
        const std::vector<uint64_t> sums = write_slice(fd, direct, slices[k], records[k], temp);
        records[k].checksum =
            legacy ? checksum64(slices[k].data, static_cast<size_t>(slices[k].box.numel()) * sizeof(float))
                   : combine_chunk_checksums(sums.data(), sums.size());
      }
      add_manifest(temp, records, !legacy);
      ND_CHECK_INPUT(::fsync(fd) == 0, "cannot fsync " << temp << ": " << errno_text());
    } catch (...) {
      ::close(fd);
      throw;
    }
    ND_CHECK_INPUT(::close(fd) == 0, "cannot close " << temp << ": " << errno_text());
    ND_CHECK_INPUT(std::rename(temp.c_str(), final_path.c_str()) == 0,
                   "cannot rename " << temp << " to " << final_path << ": " << errno_text());
    fsync_path(dir, O_RDONLY | O_DIRECTORY);
  } catch (const Error& e) {
    ::unlink(temp.c_str());
    ND_FAIL_INPUT("cannot write checkpoint part " << final_path << ": " << e.message());
  }
  return records;
}

std::vector<SliceRecord> read_part_manifest(const std::string& index_path, int rank) {
  const std::string path = directory_of(index_path) + "/" + part_file_name(index_path, rank);
  H5Id file{H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose};
  ND_CHECK_INPUT(file.id >= 0, "cannot open checkpoint part " << path);
  H5Id dset{H5Dopen2(file.id, "/manifest", H5P_DEFAULT), H5Dclose};
  ND_CHECK_INPUT(dset.id >= 0, path << " has no /manifest");
  H5Id text_type{H5Tcopy(H5T_C_S1), H5Tclose};
  H5Tset_size(text_type.id, H5T_VARIABLE);
  char* text = nullptr;
  ND_CHECK_INPUT(H5Dread(dset.id, text_type.id, H5S_ALL, H5S_ALL, H5P_DEFAULT, &text) >= 0,
                 "cannot read the manifest of " << path);
  std::string manifest = text ? text : "";
  H5Id scalar{H5Screate(H5S_SCALAR), H5Sclose};
  H5Dvlen_reclaim(text_type.id, scalar.id, H5P_DEFAULT, &text);
  bool chunked = false;  // no attribute: a part written before chunked checksums
  if (H5Aexists(dset.id, kChecksumAttribute) > 0) {
    H5Id attr{H5Aopen(dset.id, kChecksumAttribute, H5P_DEFAULT), H5Aclose};
    H5Id type{H5Aget_type(attr.id), H5Tclose};
    std::string value(H5Tget_size(type.id), '\0');
    ND_CHECK_INPUT(attr.id >= 0 && H5Tget_class(type.id) == H5T_STRING && !H5Tis_variable_str(type.id) &&
                       H5Aread(attr.id, type.id, value.data()) >= 0,
                   "cannot read the checksum attribute of " << path);
    value.resize(std::strlen(value.c_str()));
    ND_CHECK_INPUT(value == kChunkedChecksum, path << ": unknown slice checksum '" << value << "'");
    chunked = true;
  }
  std::vector<SliceRecord> out;
  std::istringstream lines(manifest);
  std::string line;
  while (std::getline(lines, line))
    if (!line.empty()) {
      out.push_back(parse_record_line(line, path));
      out.back().chunked_checksum = chunked;
    }
  return out;
}

std::string record_line(const SliceRecord& r) {
  char sum[20];
  std::snprintf(sum, sizeof(sum), "%016llx", static_cast<unsigned long long>(r.checksum));
  return r.group + "\t" + r.name + "\t" + r.part + "\t" + r.dataset + "\t" + dims_str(r.box.offset) + "\t" +
         dims_str(r.box.count) + "\t" + dims_str(r.full_shape) + "\t" + sum + "\t" + std::to_string(r.file_offset);
}

SliceRecord parse_record_line(const std::string& line, const std::string& source) {
  std::vector<std::string> f;
  std::istringstream in(line);
  std::string field;
  while (std::getline(in, field, '\t')) f.push_back(field);
  ND_CHECK_INPUT(f.size() == 9, source << ": malformed slice line '" << line << "'");
  SliceRecord r;
  try {
    r.group = f[0];
    r.name = f[1];
    r.part = f[2];
    r.dataset = f[3];
    r.box.offset = parse_dims(f[4]);
    r.box.count = parse_dims(f[5]);
    r.full_shape = parse_dims(f[6]);
    r.checksum = std::stoull(f[7], nullptr, 16);
    r.file_offset = std::stoll(f[8]);
  } catch (const std::exception&) {
    ND_FAIL_INPUT(source << ": malformed slice line '" << line << "'");
  }
  ND_CHECK_INPUT(r.box.offset.size() == r.full_shape.size() && r.box.count.size() == r.full_shape.size(),
                 source << ": malformed slice line '" << line << "'");
  // The numbers come from a file: the box must lie inside the tensor and its bytes inside a part
  // below the index's directory, every size computed without overflow.
  const std::string what = source + ": slice " + r.dataset;
  for (size_t d = 0; d < r.full_shape.size(); ++d)
    ND_CHECK_INPUT(checked_add(r.box.offset[d], r.box.count[d], what) <= r.full_shape[d],
                   what << " lies outside its tensor's shape " << dims_str(r.full_shape));
  checked_numel(r.full_shape, what + " tensor");
  ND_CHECK_INPUT(r.file_offset >= 0, what << " starts at a negative file offset " << r.file_offset);
  checked_add(r.file_offset, checked_mul(r.box.numel(), sizeof(float), what + " size in bytes"), what + " end");
  ND_CHECK_INPUT(!r.part.empty() && r.part[0] != '/' && ("/" + r.part + "/").find("/../") == std::string::npos,
                 what << " names part '" << r.part << "', not a file below the checkpoint's directory");
  return r;
}

PartReader::~PartReader() {
  for (auto& [name, fd] : open_) ::close(fd);
}

int PartReader::open_part(const SliceRecord& r) {
  for (auto& [name, open_fd] : open_)
    if (name == r.part) return open_fd;
  const std::string path = dir_ + "/" + r.part;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  ND_CHECK_INPUT(fd >= 0, "checkpoint part " << path << " is missing: " << errno_text());
  open_.emplace_back(r.part, fd);
  return fd;
}

void PartReader::check_extent(const SliceRecord& r) {
  const int fd = open_part(r);
  struct stat info {};
  ND_CHECK_INPUT(::fstat(fd, &info) == 0, "cannot stat checkpoint part " << dir_ << "/" << r.part << ": " << errno_text());
  // parse_record_line checked that this sum does not overflow.
  const int64_t end = r.file_offset + r.box.numel() * static_cast<int64_t>(sizeof(float));
  ND_CHECK_INPUT(end <= static_cast<int64_t>(info.st_size), "checkpoint part " << dir_ << "/" << r.part
                                                                  << " is truncated at " << r.dataset << " ("
                                                                  << info.st_size << " bytes, the slice ends at "
                                                                  << end << ")");
}

void PartReader::read(const SliceRecord& r, float* out) {
  check_extent(r);
  const int fd = open_part(r);
  const std::string path = dir_ + "/" + r.part;
  size_t n = static_cast<size_t>(r.box.numel()) * sizeof(float);
  char* p = reinterpret_cast<char*>(out);
  int64_t offset = r.file_offset;
  while (n > 0) {
    ssize_t got = ::pread(fd, p, n, offset);
    if (got < 0 && errno == EINTR) continue;
    ND_CHECK_INPUT(got > 0, "checkpoint part " << path << " is truncated at " << r.dataset);
    p += got;
    n -= static_cast<size_t>(got);
    offset += got;
  }
  const size_t bytes = static_cast<size_t>(r.box.numel()) * sizeof(float);
  ND_CHECK_INPUT((r.chunked_checksum ? chunked_checksum64(out, bytes) : checksum64(out, bytes)) == r.checksum,
                 "checksum mismatch in " << path << " " << r.dataset << ": the checkpoint is corrupt");
}

}  // namespace nd::train
