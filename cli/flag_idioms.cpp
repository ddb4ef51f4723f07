// The idiom tables: nanoGPT's config keys given as flags, llm.c's short flags (train_gpt2.cu's
// usage), and the values of nanoGPT's init_from; docs/FROM_NANOGPT_LLMC.md maps the same names.
#include "cli/flag_idioms.h"

#include <filesystem>

#include "cli/flags.h"

namespace nd::cli {
namespace {

struct Idiom {
  const char* name;  // dash-separated, without the dashes; llm.c's short flags keep their one dash
  const char* flag;  // the nanodist flag the hint names (given only where the command has it), or ""
  const char* hint;
};

const Idiom kIdioms[] = {
    // nanoGPT's train.py keys.
    {"compile", "cuda-graph",
     "nanoGPT's --compile has no equivalent to ask for: nanodist is compiled ahead of time, and on a GPU it captures "
     "the whole step as a CUDA graph (--cuda-graph, on by default); drop --compile"},
    {"eval-only", "",
     "nanoGPT's --eval_only is a command of its own here: nanodist eval --ckpt OUT --data DIR (the whole val split)"},
    {"wandb-log", "",
     "nanodist logs every step to OUT/metrics.jsonl; scripts/log_to.py wandb OUT follows it into Weights & Biases "
     "(offline unless --online)"},
    {"wandb-project", "", "nanodist logs to OUT/metrics.jsonl; scripts/log_to.py wandb OUT --project P sends it on"},
    {"wandb-run-name", "", "nanodist logs to OUT/metrics.jsonl; scripts/log_to.py wandb OUT --name N sends it on"},
    // llm.c's train_gpt2cu flags.
    {"-i", "data",
     "llm.c's -i is --data here: a directory or quoted glob of shards; one glob covers train and val (by the word in "
     "each name)"},
    {"-j", "data", "llm.c's -j needs no flag here: --data reads the val shards beside the train ones"},
    {"-o", "out", "llm.c's -o is --out here"},
    {"-e", "init-from",
     "llm.c's -e is --init-from DIR here (a nanodist checkpoint or a Hugging Face directory); for d12 from scratch "
     "give the shape: --n-layer 12 --n-head 12 --n-embd 768 (configs/gpt2_124m.conf)"},
    {"-b", "batch-size", "llm.c's -b is --batch-size here (sequences per rank per micro-step)"},
    {"-t", "block-size", "llm.c's -t is --block-size here"},
    {"-d", "grad-accum",
     "llm.c's -d (tokens per step) is set through --grad-accum here: a step is --batch-size x --block-size x "
     "--grad-accum x data-parallel ranks tokens"},
    {"-x", "max-iters", "llm.c's -x is --max-iters here"},
    {"-l", "lr", "llm.c's -l is --lr here"},
    {"-u", "warmup-iters", "llm.c's -u is --warmup-iters here"},
    {"-k", "lr-schedule", "llm.c's -k is --lr-schedule cosine|linear|wsd|constant here"},
    {"-q", "min-lr", "llm.c's -q is --min-lr here, absolute: -l 6e-4 -q 0.1 is --min-lr 6e-5"},
    {"-c", "weight-decay", "llm.c's -c is --weight-decay here"},
    {"-v", "eval-interval", "llm.c's -v is --eval-interval here"},
    {"-m", "eval-iters", "llm.c's -m is --eval-iters here"},
    {"-n", "ckpt-interval", "llm.c's -n is --ckpt-interval here"},
    {"-nk", "keep", "llm.c's -nk is --keep here"},
    {"-y", "resume", "llm.c's -y 1 is --resume here"},
    {"-z", "zero", "llm.c's -z is --zero here"},
    {"-r", "recompute", "llm.c's -r is --recompute none|attention|block here"},
    {"-w", "master-weights", "llm.c's -w is --master-weights true|false here"},
    {"-s", "", "llm.c's -s has no flag here: nanodist sample --ckpt OUT prints a sample of a saved run"},
    {"-g", "", "llm.c's -g is nanodist sample --ckpt OUT --tokens N here"},
    {"-pn", "", "llm.c's -pn is the launcher's: mpirun -np N nanodist ... starts the ranks"},
};

std::string normalize(std::string name) {
  for (char& c : name)
    if (c == '_') c = '-';
  return name;
}

}  // namespace

std::string flag_idiom(const std::string& arg, const FlagSet& set) {
  std::string name = arg.substr(0, arg.find('='));
  if (name.rfind("--", 0) == 0) name = name.substr(2);
  name = normalize(name);
  for (const Idiom& idiom : kIdioms) {
    if (name != idiom.name) continue;
    if (*idiom.flag != '\0' && set.find(idiom.flag) == nullptr) return "";
    return idiom.hint;
  }
  return "";
}

std::string value_idiom(const std::string& flag, const std::string& value) {
  if (flag != "init-from") return "";
  std::error_code ec;
  if (std::filesystem::exists(value, ec)) return "";  // a directory of that name is what it says
  if (value == "resume")
    return "--init-from resume is nanoGPT's init_from='resume'; nanodist continues the run in --out with --resume";
  if (value == "scratch") return "--init-from scratch is nanoGPT's default; a run starts from scratch without --init-from";
  if (value.rfind("gpt2", 0) == 0)
    return "--init-from takes a directory: download openai-community/" + value +
           " (config.json and model.safetensors) and pass its path";
  return "";
}

}  // namespace nd::cli
