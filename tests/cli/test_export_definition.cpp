// `memsweep export`'s `definition` of a program trial (issue 43): it was
// /trials' stored text, TrialSpec::canonical_text(), which is
// "dataset=synthetic;…;model=mlp;optimizer=sgd;learning_rate=0.01;…;
// hidden=128;…" (built-in defaults the program never saw), then the
// command, cut at 512 bytes in the middle of the params JSON. Now it is
// made of the trial's own fields: the program, the built-in fields it uses,
// its seed and repeat, and its params whole. A built-in trial's stays the
// stored text.
//
// The program is a real PyTorch script (a small LSTM language model, as
// pytorch/examples' word_language_model, run unmodified by memsweep), its
// sweep as a user writes one: [params] for its own arguments, batch size
// and epochs from the built-in fields.

#include "memsweep/store.hpp"
#include "support/exit_statuses.hpp"
#include "support/subprocess.hpp"
#include "support/temp_dir.hpp"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace memsweep::testing {
namespace {

using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

constexpr char kScript[] = R"(import argparse
import torch

parser = argparse.ArgumentParser()
parser.add_argument("--bptt", type=int, required=True)
parser.add_argument("--emsize", type=int, required=True)
parser.add_argument("--arch", required=True)
parser.add_argument("--batch_size", type=int, required=True)
parser.add_argument("--epochs", type=int, required=True)
args = parser.parse_args()
torch.set_num_threads(1)
torch.manual_seed(0)
vocab = 64
embedding = torch.nn.Embedding(vocab, args.emsize)
rnn = torch.nn.LSTM(args.emsize, args.emsize) if args.arch == "LSTM" else torch.nn.GRU(args.emsize, args.emsize)
decoder = torch.nn.Linear(args.emsize, vocab)
parameters = [*embedding.parameters(), *rnn.parameters(), *decoder.parameters()]
optimizer = torch.optim.SGD(parameters, lr=0.5)
for epoch in range(args.epochs):
    tokens = torch.randint(0, vocab, (args.bptt + 1, args.batch_size))
    hidden, _ = rnn(embedding(tokens[:-1]))
    loss = torch.nn.functional.cross_entropy(decoder(hidden).reshape(-1, vocab), tokens[1:].reshape(-1))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"| end of epoch {epoch + 1} | valid loss {loss.item():5.2f} | valid ppl {loss.exp().item():8.2f}", flush=True)
)";

// A long note among the params: with the command, the stored definition
// passes its 512 bytes; the last key (zz_last, sorted last) is then lost.
std::string sweep_text(const std::string& script) {
  return fmt::format(R"([sweep]
name = "wlm"
seed = 7
[programs.wlm]
command = ["/usr/bin/python3", "{}", "--bptt", "{{bptt}}", "--emsize", "{{emsize}}", "--arch", "{{arch}}",
           "--batch_size", "{{batch_size}}", "--epochs", "{{epochs}}"]
[[trial]]
program = "wlm"
batch_size = 4
epochs = 2
params = {{ arch = "LSTM", bptt = 12, emsize = 16, dropout = 0.2, tied = true, note = "{}", zz_last = 1 }}
[[trial]]
dataset = "synthetic"
synthetic = {{ shape = [1, 4, 4], classes = 2, train_size = 64, test_size = 16 }}
hidden = [4]
epochs = 1
batch_size = 32
)",
                     script, std::string(220, 'n'));
}

// A TSV export's rows as maps from column to cell.
std::vector<std::map<std::string, std::string>> tsv_rows(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  std::getline(in, line);
  std::vector<std::string> header;
  for (std::istringstream cells(line); std::getline(cells, line, '\t');) header.push_back(line);
  std::vector<std::map<std::string, std::string>> rows;
  while (std::getline(in, line)) {
    std::map<std::string, std::string> row;
    std::size_t column = 0;
    std::size_t start = 0;
    for (std::size_t tab = line.find('\t'); column < header.size(); tab = line.find('\t', start)) {
      row[header[column++]] = line.substr(start, tab == std::string::npos ? std::string::npos : tab - start);
      if (tab == std::string::npos) break;
      start = tab + 1;
    }
    rows.push_back(row);
  }
  return rows;
}

TEST(ExportDefinition, AProgramTrialsIsItsOwnFieldsWholeABuiltInTrialsTheStoredText) {
  const TempDir dir;
  const std::string script = dir.write("wlm.py", kScript).string();
  const std::string sweep = dir.write("wlm.toml", sweep_text(script)).string();
  const std::string results = (dir.path() / "wlm.h5").string();
  const CommandResult run = run_memsweep({"run", sweep, "-o", results, "-q"}, dir.path().string());
  ASSERT_EQ(run.exit_status, kOk) << run.err;
  ASSERT_THAT(run.err, HasSubstr("(2 ok)")) << run.err << "\n(is PyTorch installed for /usr/bin/python3?)";

  // The issue's case, as stored: the built-in defaults, and the params cut.
  std::map<std::string, std::string> stored;
  {
    const ResultReader reader(results);
    for (const TrialRow& row : reader.trials()) stored[get_fixed(row.trainer)] = get_fixed(row.definition);
  }
  ASSERT_EQ(stored.size(), 2u);
  ASSERT_THAT(stored["wlm"], StartsWith("dataset=synthetic;synthetic="));
  ASSERT_THAT(stored["wlm"], HasSubstr(";model=mlp;optimizer=sgd;learning_rate=0.01;"));
  ASSERT_EQ(stored["wlm"].size(), 512u);
  ASSERT_THAT(stored["wlm"], Not(HasSubstr("zz_last")));

  const CommandResult exported = run_memsweep({"export", results, "--format", "tsv"});
  ASSERT_EQ(exported.exit_status, kOk) << exported.err;
  const std::vector<std::map<std::string, std::string>> rows = tsv_rows(exported.out);
  ASSERT_EQ(rows.size(), 2u) << exported.out;
  for (const auto& row : rows) {
    SCOPED_TRACE(row.at("trainer"));
    const std::string& definition = row.at("definition");
    if (row.at("trainer") == "memsweep") {
      EXPECT_EQ(definition, stored["memsweep"]);
      EXPECT_THAT(definition, StartsWith("dataset=synthetic;synthetic=1x4x4/2/64/16/"));
      continue;
    }
    // Only what the trial has: the fields its file sets or names, whole.
    EXPECT_EQ(row.at("dataset"), "");
    EXPECT_THAT(row.at("params"), EndsWith(",\"zz_last\":1}"));
    EXPECT_EQ(definition, fmt::format("program=wlm;epochs=2;batch_size=4;seed={};repeat=0;params={}", row.at("seed"),
                                      row.at("params")));
    for (const char* absent : {"dataset=", "synthetic=", "model=", "optimizer=", "learning_rate=", "hidden=", "(cut)"})
      EXPECT_THAT(definition, Not(HasSubstr(absent)));
  }

  // The CSV gives the same text.
  const CommandResult csv = run_memsweep({"export", results});
  ASSERT_EQ(csv.exit_status, kOk) << csv.err;
  EXPECT_THAT(csv.out, HasSubstr("program=wlm;epochs=2;batch_size=4;seed="));
}

}  // namespace
}  // namespace memsweep::testing
