// The encode pipeline: the main thread reads pieces and hands them to one std::async task each,
// at most threads + 2 at a time (one being appended, one being read while the threads work),
// and appends their ids in text order as they finish.
#include "data/prepare_encode.h"

#include <chrono>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <future>
#include <memory>

#include "data/text_pieces.h"
#include "data/token_file_appender.h"
#include "tensor/error.h"

namespace nd {
namespace {

using Clock = std::chrono::steady_clock;

// The parts of `state`, the last one open for appending.
class PartWriter {
 public:
  PartWriter(const EncodeJob& job, PrepareState& state) : job_(job), state_(state) {
    if (state_.parts.empty()) {
      state_.parts.push_back(0);
      open_last(-1);
    } else {
      open_last(state_.parts.back());
    }
  }
  void append(const std::vector<int32_t>& ids) {
    for (size_t done = 0; done < ids.size();) {
      if (file_->count() == job_.shard_tokens) {
        file_->close();
        state_.parts.push_back(0);
        open_last(-1);
      }
      const size_t n = std::min(ids.size() - done, static_cast<size_t>(job_.shard_tokens - file_->count()));
      file_->append(ids.data() + done, static_cast<int64_t>(n));
      done += n;
      state_.parts.back() = file_->count();
    }
  }
  // What was appended survives a crash once this returns.
  void checkpoint(int64_t offset) {
    file_->sync();
    state_.offset = offset;
    write_prepare_state(state_path(job_.work_dir), state_);
  }
  void close(int64_t offset) {
    file_->close();
    state_.offset = offset;
    write_prepare_state(state_path(job_.work_dir), state_);
  }

 private:
  void open_last(int64_t keep) {
    file_ = std::make_unique<TokenFileAppender>(part_path(job_.work_dir, state_.parts.size() - 1),
                                                job_.tokenizer->vocab_size(), keep);
  }
  const EncodeJob& job_;
  PrepareState& state_;
  std::unique_ptr<TokenFileAppender> file_;
};

struct Piece {
  int64_t begin = 0, end = 0;
  std::future<std::vector<int32_t>> ids;
};

}  // namespace

std::string part_path(const std::string& work_dir, size_t index) {
  char name[32];
  std::snprintf(name, sizeof name, "part_%06zu.bin", index);
  return (std::filesystem::path(work_dir) / name).string();
}

std::string state_path(const std::string& work_dir) { return (std::filesystem::path(work_dir) / "state.txt").string(); }

void encode_into_parts(const EncodeJob& job, PrepareState& state) {
  ND_CHECK(job.shard_tokens >= 1 && job.piece_bytes >= 1 && job.threads >= 1, "encode_into_parts: bad job");
  const TextStream& stream = *job.stream;
  const bool bytewise = job.tokenizer->kind() == "char";
  PartWriter parts(job, state);
  std::deque<Piece> flight;
  int64_t next = state.offset;
  Clock::time_point last_checkpoint = Clock::now();
  while (next < stream.size() || !flight.empty()) {
    while (next < stream.size() && flight.size() < static_cast<size_t>(job.threads + 2)) {
      auto text = std::make_shared<std::string>();
      Piece piece;
      piece.begin = next;
      piece.end = next = read_piece(stream, next, job.piece_bytes, bytewise, *text);
      piece.ids = std::async(std::launch::async, [text, &job] { return job.tokenizer->encode(*text); });
      flight.push_back(std::move(piece));
    }
    Piece piece = std::move(flight.front());
    flight.pop_front();
    std::vector<int32_t> ids;
    try {
      ids = piece.ids.get();
    } catch (const Error& e) {
      flight.clear();  // waits for the pieces still being encoded
      std::error_code ec;
      std::filesystem::remove_all(job.work_dir, ec);
      ND_FAIL_INPUT(stream.name() << ", in the bytes from " << piece.begin << ": " << e.message() << job.error_hint);
    }
    parts.append(ids);
    const bool due = std::chrono::duration<double>(Clock::now() - last_checkpoint).count() >= job.checkpoint_seconds;
    if (due && piece.end < stream.size()) {
      parts.checkpoint(piece.end);
      last_checkpoint = Clock::now();
    }
    if (job.progress) job.progress(static_cast<double>(piece.end) / static_cast<double>(stream.size()));
  }
  parts.close(stream.size());
}

}  // namespace nd
