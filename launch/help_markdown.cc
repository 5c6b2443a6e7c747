// docs/configuration.md from the program's own tables (see help_markdown.h). The prose around the tables
// is a few lines; everything a flag or key means comes from its description in the code.
#include "launch/help_markdown.h"

#include <algorithm>
#include <cstdio>
#include <set>
#include <sstream>
#include <utility>
#include <vector>

#include "launch/ds_keys.h"
#include "launch/flag_table.h"
#include "model/model_config.h"

namespace po = boost::program_options;

namespace tz {
namespace {

// Text made safe for one Markdown table cell: no pipes, line breaks or HTML tags.
std::string cell(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '|')
      out += "\\|";
    else if (c == '\n')
      out += ' ';
    else if (c == '<')
      out += "&lt;";
    else
      out += c;
  }
  return out;
}

std::string code(const std::string& text) { return "`" + text + "`"; }

// A description as a sentence: ending with a full stop (the first word may be a value, e.g. cpu: as is).
std::string sentence(std::string text) {
  if (text.empty()) return text;
  const char last = text.back();
  if (last != '.' && last != ')' && last != '`') text += '.';
  if (last == ')') text += '.';
  return text;
}

// The default column: off for a switch, the default as --help prints it, (required) or (none).
std::string default_text(const po::option_description& o) {
  const auto& sem = *o.semantic();
  if (sem.max_tokens() == 0) return "off";
  if (sem.is_required()) return "(required)";
  const std::string name = sem.name();  // "arg (=5e8)" or "arg"
  const std::size_t at = name.find(" (=");
  if (at == std::string::npos || name.back() != ')') return "(none)";
  return code(name.substr(at + 3, name.size() - at - 4));
}

// The caption's head ("tierzero bench io: what it does, over\nseveral lines"), as a usage and a paragraph.
std::pair<std::string, std::string> caption_parts(const po::options_description& desc) {
  std::ostringstream os;
  os << desc;
  std::string head = os.str();
  head = head.substr(0, head.find("\n\n"));
  for (std::size_t i = 0; i < head.size(); ++i)  // --help's line breaks; "working-\ncopy" is one word
    if (head[i] == '\n') head[i] = (i > 0 && head[i - 1] == '-') ? '\r' : ' ';
  head.erase(std::remove(head.begin(), head.end(), '\r'), head.end());
  const std::size_t colon = head.find(": ");
  if (colon == std::string::npos) return {head, ""};
  return {head.substr(0, colon), head.substr(colon + 2)};
}

std::string anchor_of_command(const std::string& command) {
  std::string a = "tierzero-" + command;
  for (char& c : a)
    if (c == ' ') c = '-';
  return a;
}

void flag_rows(std::string& out, const FlagTable& t, const std::set<std::string>& skip) {
  out += "| Flag | Default | Meaning |\n|---|---|---|\n";
  for (const auto& o : t.desc->options()) {
    const std::string name = o->long_name();
    if (name == "help" || skip.count(name)) continue;
    out += "| " + code("--" + name) + " | " + cell(default_text(*o)) + " | " +
           cell(sentence(o->description())) + " |\n";
  }
}

void command_section(std::string& out, const FlagTable& t, const std::vector<FlagTable>& all) {
  const auto [usage, text] = caption_parts(*t.desc);
  out += "\n## " + code("tierzero " + t.command) + "\n\n";
  if (usage != "tierzero " + t.command) out += code(usage) + ": ";
  std::string para = sentence(text);
  if (!para.empty() && para[0] >= 'a' && para[0] <= 'z')
    para[0] = char(para[0] - 'a' + 'A');  // prose, not a value
  out += para + "\n\n";
  std::set<std::string> skip;
  for (const FlagTable& base : all)
    if (!t.also.empty() && base.command == t.also) {
      for (const auto& o : base.desc->options()) skip.insert(o->long_name());
      out += "It takes every [" + code("tierzero " + base.command) + "](#" + anchor_of_command(base.command) +
             ") flag too, and these:\n\n";
    }
  flag_rows(out, t, skip);
}

std::string flags_cell(const std::string& flags) {
  if (flags.empty()) return "";
  std::string out;
  std::istringstream in(flags);
  for (std::string f; std::getline(in, f, ',');) {
    while (!f.empty() && f[0] == ' ') f.erase(0, 1);
    out += (out.empty() ? "" : ", ") + code(f);
  }
  return out;
}

// One object's keys: those read (with the flag that overrides each), accepted with no effect, refused.
void key_rows(std::string& out, const KeyLevel& level) {
  out += "| Key | Flag | In tierzero |\n|---|---|---|\n";
  for (const ReadKey& k : level.read)
    out += "| " + code(k.name) + " | " + flags_cell(k.flag) + " | " +
           cell(sentence(std::string("Read: ") + k.does)) + " |\n";
  for (const NoEffectKey& k : level.no_effect)
    out += "| " + code(k.name) + " |  | " + cell(sentence(std::string("No effect: ") + k.why)) + " |\n";
  for (const RefusedKey& k : level.refused) {
    const std::string note = *k.note ? k.note : "not implemented";
    const std::string what =
        k.accepted ? "Only " + code(k.accepted) + " is accepted: " + note : std::string("Refused: ") + note;
    out += "| " + code(k.name) + " |  | " + cell(sentence(what)) + " |\n";
  }
}

// scheduler.params: the keys of every DeepSpeed schedule, each once (its text names the types that take it).
KeyLevel scheduler_params_union() {
  KeyLevel all;
  std::set<std::string> seen;
  for (LrSchedule s : {LrSchedule::warmup, LrSchedule::warmup_decay, LrSchedule::warmup_cosine}) {
    const KeyLevel& l = scheduler_params_keys(s);
    for (const ReadKey& k : l.read)
      if (seen.insert(k.name).second) all.read.push_back(k);
    for (const RefusedKey& k : l.refused)
      if (seen.insert(k.name).second) all.refused.push_back(k);
  }
  return all;
}

void deepspeed_section(std::string& out) {
  out +=
      "\n## DeepSpeed config keys\n\n"
      "Every key DeepSpeed documents in these objects of a `--config` file, and what tierzero does with it "
      "(launch/ds_keys.cc). **Read**: it sets what DeepSpeed's key sets; a flag typed on the command line "
      "overrides it. **No effect**: accepted and type-checked, and a printed line says why it changes "
      "nothing "
      "here. **Only V is accepted**: the value that means what tierzero does; any other would change the "
      "numbers and is refused. **Refused**: stops the run, saying what to do. Any other key is refused, "
      "naming "
      "the nearest known one. How the file is read (precedence, `\"auto\"`, batch sizes, sizes of 0, errors, "
      "an example): [deepspeed.md](deepspeed.md).\n";
  const std::pair<const char*, const KeyLevel*> levels[] = {
      {"Top level", &top_level_keys()},
      {"`zero_optimization`", &zero_keys()},
      {"`zero_optimization.offload_optimizer`", &offload_optimizer_keys()},
      {"`zero_optimization.offload_param`", &offload_param_keys()},
      {"`aio`", &aio_keys()},
      {"`fp16`", &fp16_keys()},
      {"`bf16`", &bf16_keys()},
      {"`optimizer`", &optimizer_keys()},
      {"`optimizer.params`", &adam_params_keys()},
      {"`scheduler`", &scheduler_keys()}};
  for (const auto& [title, level] : levels) {
    out += std::string("\n### ") + title + "\n\n";
    key_rows(out, *level);
  }
  out += "\n### `scheduler.params`\n\n";
  key_rows(out, scheduler_params_union());
}

std::string parameters_text(std::size_t n) {
  char buf[32];
  const double m = double(n) / 1e6;
  if (m >= 1000)
    std::snprintf(buf, sizeof buf, "%.2fB", m / 1000);
  else if (m >= 1)
    std::snprintf(buf, sizeof buf, "%.1fM", m);
  else
    std::snprintf(buf, sizeof buf, "%.2fM", m);
  return buf;
}

void presets_section(std::string& out) {
  out +=
      "\n## Model presets\n\n"
      "`--model` takes these (model/gpt_family.cc, model/llama_family.cc); the size flags override a preset "
      "field by field, and `--init-from` a Hugging Face folder's `config.json` sets the model instead "
      "([data.md](data.md#safetensors)). The vocabulary is padded inside to a multiple of 128; the padded "
      "rows "
      "are never trained toward and are dropped on export. Parameters are counted as Hugging Face counts "
      "them, without the padded rows.\n\n"
      "| Preset | Family | Layers | Heads (key-value) | Width | Vocabulary (padded) | Positions | Parameters "
      "|\n"
      "|---|---|---|---|---|---|---|---|\n";
  for (const std::string& name : model_preset_names()) {
    const ModelConfig c = model_preset(name);
    const int kv = c.n_kv_head ? c.n_kv_head : c.n_head;
    out += "| " + code(name) + " | " + c.family + " | " + std::to_string(c.n_layer) + " | " +
           std::to_string(c.n_head) + " (" + std::to_string(kv) + ") | " + std::to_string(c.n_embd) + " | " +
           std::to_string(c.vocab_size) + " (" + std::to_string(c.padded_vocab_size) + ") | " +
           std::to_string(c.max_seq_len) + " | " + parameters_text(c.num_parameters_unpadded()) + " |\n";
  }
}

}  // namespace

std::string help_markdown() {
  const std::vector<FlagTable> tables = all_flag_tables();
  std::string out =
      "<!-- Generated by `tierzero help --markdown` from the flag tables and DeepSpeed key tables in launch/ "
      "(launch/help_markdown.cc). Do not edit: change a description in the code, then run "
      "scripts/gen-config-doc.sh BUILD/launch/tierzero. ctest docs_configuration_is_generated compares the "
      "two. "
      "-->\n"
      "# Configuration reference\n\n"
      "Every flag of every `tierzero` command, with its default, and every key of a DeepSpeed JSON config "
      "(`--config`), generated from the tables the program parses them with: `tierzero <command> --help` "
      "prints "
      "the same descriptions. How flags take values, and the environment variables tierzero reads: "
      "[launching.md](launching.md#flags-and-environment-variables). Elsewhere: how a DeepSpeed config is "
      "read "
      "([deepspeed.md](deepspeed.md)); AdamW, the learning-rate schedules and fp16 loss scaling "
      "([optimizer.md](optimizer.md)); what the memory budgets count "
      "([planning.md](planning.md#what-the-budgets-count)); the `--metrics` file "
      "([metrics.md](metrics.md)).\n\n";
  for (const FlagTable& t : tables)
    out += "- [" + code("tierzero " + t.command) + "](#" + anchor_of_command(t.command) + ")\n";
  out += "- [DeepSpeed config keys](#deepspeed-config-keys)\n- [Model presets](#model-presets)\n";
  for (const FlagTable& t : tables) command_section(out, t, tables);
  deepspeed_section(out);
  presets_section(out);
  return out;
}

}  // namespace tz
