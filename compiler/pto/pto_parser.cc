#include "compiler/pto/pto_parser.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <set>
#include <string>
#include <vector>

namespace pypto::compiler::pto {

namespace {

// Tiles above this many elements are refused (far above any on-chip buffer).
constexpr int64_t kMaxTileElements = int64_t{1} << 24;
constexpr int64_t kMaxExtent = int64_t{1} << 40;
constexpr size_t kMaxNesting = 100;

enum class TK { kIdent, kDirective, kReg, kInt, kFloat, kPunct, kString, kBad };

struct Token {
  TK kind = TK::kBad;
  std::string text;
  uint32_t begin = 0, end = 0;
  int64_t int_value = 0;
  double float_value = 0;
};

bool ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

const std::set<std::string>& option_words() {
  static const std::set<std::string> words = {"set", "add", "eq", "ne", "gt", "ge", "lt", "le"};
  return words;
}

struct Block {
  std::vector<Inst>* insts;
  Inst* owner;  // the for/if instruction, or nullptr for the unit body
  bool in_else = false;
};

class Parser {
 public:
  Parser(const SourceManager& sources, int32_t file, DiagnosticEngine& diags)
      : file_(file), text_(sources.file(file).text()), diags_(diags) {}

  std::optional<Unit> run() {
    const int errors_before = diags_.error_count();
    size_t pos = 0;
    int line_no = 0;
    while (pos <= text_.size()) {
      size_t eol = text_.find('\n', pos);
      if (eol == std::string::npos) eol = text_.size();
      ++line_no;
      line_ = line_no;
      line_begin_ = static_cast<uint32_t>(pos);
      line_end_ = static_cast<uint32_t>(eol);
      if (tokenize(pos, eol)) parse_line();
      if (diags_.error_count() >= DiagnosticEngine::kMaxErrors) break;
      pos = eol + 1;
    }
    if (diags_.error_count() == errors_before) finish();
    if (diags_.error_count() != errors_before) return std::nullopt;
    return std::move(unit_);
  }

 private:
  // ------------------------------------------------------------ lexing
  Span span(uint32_t b, uint32_t e) const { return Span{file_, b, e > b ? e : b + 1}; }
  Span span(const Token& t) const { return span(t.begin, t.end); }
  void error(const Token& t, const std::string& m) { diags_.error(span(t), m); }
  void error(Span s, const std::string& m) { diags_.error(s, m); }

  bool tokenize(size_t pos, size_t eol) {
    toks_.clear();
    i_ = 0;
    size_t p = pos;
    while (p < eol) {
      const char c = text_[p];
      if (c == '#') break;
      if (c == ' ' || c == '\t' || c == '\r') {
        ++p;
        continue;
      }
      Token t;
      t.begin = static_cast<uint32_t>(p);
      if (c == '.' && p + 1 < eol && ident_start(text_[p + 1])) {
        size_t q = p + 1;
        while (q < eol && ident_char(text_[q])) ++q;
        t.kind = TK::kDirective;
        t.text = text_.substr(p, q - p);
        p = q;
      } else if (ident_start(c)) {
        size_t q = p;
        while (q < eol && ident_char(text_[q])) ++q;
        t.kind = TK::kIdent;
        t.text = text_.substr(p, q - p);
        p = q;
      } else if (c == '%') {
        size_t q = p + 1;
        while (q < eol && ident_char(text_[q])) ++q;
        t.text = text_.substr(p + 1, q - p - 1);
        t.kind = TK::kReg;
        if (t.text.empty()) {
          t.end = static_cast<uint32_t>(p + 1);
          error(t, "expected a register name after '%'");
          return false;
        }
        p = q;
      } else if (std::isdigit(static_cast<unsigned char>(c)) ||
                 ((c == '-' || c == '+') && p + 1 < eol &&
                  (std::isdigit(static_cast<unsigned char>(text_[p + 1])) ||
                   text_[p + 1] == '.'))) {
        size_t q = p + 1;
        bool is_float = false;
        while (q < eol) {
          const char d = text_[q];
          if (std::isdigit(static_cast<unsigned char>(d))) {
            ++q;
          } else if (d == '.' || d == 'e' || d == 'E') {
            is_float = true;
            ++q;
            if ((d == 'e' || d == 'E') && q < eol && (text_[q] == '-' || text_[q] == '+')) ++q;
          } else {
            break;
          }
        }
        if (q < eol && ident_char(text_[q])) {
          while (q < eol && ident_char(text_[q])) ++q;
          t.end = static_cast<uint32_t>(q);
          error(t, "malformed number '" + text_.substr(p, q - p) + "'");
          return false;
        }
        t.text = text_.substr(p, q - p);
        t.end = static_cast<uint32_t>(q);
        errno = 0;
        char* endp = nullptr;
        if (is_float) {
          t.kind = TK::kFloat;
          t.float_value = std::strtod(t.text.c_str(), &endp);
          if (endp != t.text.c_str() + t.text.size() || !std::isfinite(t.float_value)) {
            error(t, "malformed or out-of-range number '" + t.text + "'");
            return false;
          }
        } else {
          t.kind = TK::kInt;
          const long long v = std::strtoll(t.text.c_str(), &endp, 10);
          if (endp != t.text.c_str() + t.text.size() || errno == ERANGE) {
            error(t, "integer '" + t.text + "' does not fit in 64 bits");
            return false;
          }
          t.int_value = v;
        }
        p = q;
      } else if (c == '"') {
        // A path (.source): everything up to the next quote on the line, no escapes.
        const size_t close = text_.find('"', p + 1);
        if (close == std::string::npos || close >= eol) {
          t.end = static_cast<uint32_t>(eol);
          error(t, "unterminated string: expected a closing '\"' on this line");
          return false;
        }
        t.kind = TK::kString;
        t.text = text_.substr(p + 1, close - p - 1);
        p = close + 1;
      } else if (c == ':' || c == '=' || c == ',' || c == '[' || c == ']') {
        t.kind = TK::kPunct;
        t.text = std::string(1, c);
        ++p;
      } else {
        t.end = static_cast<uint32_t>(p + 1);
        const unsigned char uc = static_cast<unsigned char>(c);
        error(t, std::isprint(uc) ? std::string("unexpected character '") + c + "'"
                                  : "unexpected byte 0x" + hex(uc));
        return false;
      }
      t.end = static_cast<uint32_t>(p);
      toks_.push_back(std::move(t));
    }
    return true;
  }

  static std::string hex(unsigned char c) {
    const char* d = "0123456789abcdef";
    return std::string{d[c >> 4], d[c & 15]};
  }

  bool at_end() const { return i_ >= toks_.size(); }
  const Token& peek() const { return toks_[i_]; }
  // A zero-width token at the end of the line, for "expected ..." errors.
  Token eol_token() const {
    Token t;
    t.begin = t.end = line_end_;
    return t;
  }
  const Token& cur_or_eol() {
    if (at_end()) {
      eol_ = eol_token();
      return eol_;
    }
    return peek();
  }
  bool is_punct(const char* p) const {
    return !at_end() && peek().kind == TK::kPunct && peek().text == p;
  }
  bool expect_punct(const char* p, const std::string& what) {
    if (is_punct(p)) {
      ++i_;
      return true;
    }
    error(cur_or_eol(), "expected '" + std::string(p) + "' " + what);
    return false;
  }
  bool expect_ident(std::string& out, const std::string& what, Token* tok = nullptr) {
    if (!at_end() && peek().kind == TK::kIdent) {
      out = peek().text;
      if (tok) *tok = peek();
      ++i_;
      return true;
    }
    error(cur_or_eol(), "expected " + what);
    return false;
  }
  bool expect_line_end() {
    if (at_end()) return true;
    error(peek(), "unexpected '" + peek().text + "' at the end of the line");
    return false;
  }

  // ------------------------------------------------------------ lines
  void parse_line() {
    if (toks_.empty()) return;
    const Token& first = toks_[0];
    if (state_ == kAfterEnd) {
      error(first, "text after '.end'; a .pto file holds one kernel unit");
      return;
    }
    if (first.kind == TK::kDirective) {
      directive();
      return;
    }
    if (state_ == kBeforeKernel) {
      error(first, "expected '.kernel <name> aiv|aic' before any instruction");
      return;
    }
    state_ = kBody;
    instruction();
  }

  void directive() {
    const Token d = toks_[0];
    i_ = 1;
    if (d.text == ".kernel") {
      if (state_ != kBeforeKernel) {
        error(d, "a second '.kernel'; a .pto file holds one kernel unit");
        return;
      }
      std::string name, core;
      Token core_tok;
      if (!expect_ident(name, "the kernel unit's name after '.kernel'")) return;
      if (!expect_ident(core, "the core type 'aiv' or 'aic' after the name", &core_tok)) return;
      if (core != "aiv" && core != "aic") {
        error(core_tok, "unknown core type '" + core + "'; expected 'aiv' or 'aic'");
        return;
      }
      if (!expect_line_end()) return;
      unit_.name = name;
      unit_.core = core == "aic" ? CoreType::kAic : CoreType::kAiv;
      kernel_tok_ = d;
      state_ = kParams;
      blocks_.push_back(Block{&unit_.body, nullptr});
      return;
    }
    if (d.text == ".tensor" || d.text == ".window" || d.text == ".scalar") {
      if (state_ == kBeforeKernel) {
        error(d, "'" + d.text + "' before '.kernel'");
        return;
      }
      if (state_ != kParams) {
        error(d, "parameters ('" + d.text + "') must come before the first instruction");
        return;
      }
      param(d);
      return;
    }
    if (d.text == ".source") {
      if (state_ != kParams) {
        error(d, state_ == kBeforeKernel ? "'.source' before '.kernel'"
                                         : "'.source' must come before the first instruction");
        return;
      }
      if (at_end() || peek().kind != TK::kString) {
        error(d, "expected the program source's path in quotes after '.source'");
        return;
      }
      unit_.source = peek().text;
      ++i_;
      expect_line_end();
      return;
    }
    if (d.text == ".loc") {
      if (state_ == kBeforeKernel) {
        error(d, "'.loc' before '.kernel'");
        return;
      }
      if (at_end() || peek().kind != TK::kInt || peek().int_value < 1 ||
          peek().int_value > INT32_MAX) {
        error(d, "expected a line number (1 or more) after '.loc'");
        return;
      }
      loc_ = static_cast<int>(peek().int_value);
      ++i_;
      expect_line_end();
      return;
    }
    if (d.text == ".end") {
      if (state_ == kBeforeKernel) {
        error(d, "'.end' without '.kernel'");
        return;
      }
      if (!expect_line_end()) return;
      if (blocks_.size() > 1) {
        const Inst* open = blocks_.back().owner;
        error(d, std::string("'.end' inside an open '") + opcode_name(open->op) +
                     "' block; close it with 'end' first");
        diags_.note(open->span, "the block opened here");
        return;
      }
      state_ = kAfterEnd;
      return;
    }
    error(d, "unknown directive '" + d.text + "'; expected .kernel, .tensor, .window, "
             ".scalar, .source, .loc or .end");
  }

  void param(const Token& d) {
    Param p;
    Token name_tok;
    if (!expect_ident(p.name, "a parameter name after '" + d.text + "'", &name_tok)) return;
    p.span = span(name_tok);
    if (unit_.find_param(p.name) >= 0) {
      error(name_tok, "parameter '" + p.name + "' is declared twice");
      return;
    }
    if (option_words().count(p.name)) {
      error(name_tok, "'" + p.name + "' is an option word and cannot name a parameter");
      return;
    }
    if (d.text == ".tensor") {
      p.kind = ParamKind::kTensor;
      std::string dir;
      Token dir_tok;
      if (!expect_ident(dir, "the direction in, out or inout", &dir_tok)) return;
      if (dir == "in") {
        p.dir = Direction::kIn;
      } else if (dir == "out") {
        p.dir = Direction::kOut;
      } else if (dir == "inout") {
        p.dir = Direction::kInOut;
      } else {
        error(dir_tok, "unknown direction '" + dir + "'; expected in, out or inout");
        return;
      }
    } else {
      p.kind = d.text == ".window" ? ParamKind::kWindow : ParamKind::kScalar;
    }
    Token dt_tok;
    if (!dtype(p.dtype, &dt_tok)) return;
    if (p.kind == ParamKind::kScalar) {
      if (p.dtype != DType::kF32 && !is_int_dtype(p.dtype)) {
        error(dt_tok, std::string("scalar parameters are integers (i8..i64, u8) or f32, not ") +
                          dtype_name(p.dtype));
        return;
      }
    } else {
      if (!supported_dtype(p.dtype)) {
        error(dt_tok, std::string(dtype_name(p.dtype)) +
                          " tensors are not supported yet; use f32, f16, bf16, i8, i16, i32, i64 or u8");
        return;
      }
      if (!expect_punct("[", "and the shape after the dtype")) return;
      if (!extents(p.shape, 1, PYPTO_MAX_DIMS_)) return;
      if (p.kind == ParamKind::kWindow && p.dtype != DType::kF32 && p.dtype != DType::kI32 &&
          p.dtype != DType::kI64 && p.dtype != DType::kI8 && p.dtype != DType::kI16 &&
          p.dtype != DType::kU8) {
        error(dt_tok, std::string(dtype_name(p.dtype)) + " windows are not supported yet");
        return;
      }
    }
    if (!expect_line_end()) return;
    unit_.params.push_back(std::move(p));
  }
  static constexpr size_t PYPTO_MAX_DIMS_ = 8;

  static bool is_int_dtype(DType d) {
    return d == DType::kI8 || d == DType::kI16 || d == DType::kI32 || d == DType::kI64 ||
           d == DType::kU8;
  }

  bool dtype(DType& out, Token* tok) {
    std::string name;
    Token t;
    if (!expect_ident(name, "a dtype (f32, i32, ...)", &t)) return false;
    std::optional<DType> d = parse_dtype(name);
    if (!d) {
      error(t, "unknown dtype '" + name + "'; expected one of " + std::string(dtype_names()));
      return false;
    }
    out = *d;
    if (tok) *tok = t;
    return true;
  }

  // After '[': positive integer extents up to ']'.
  bool extents(std::vector<int64_t>& out, size_t min_n, size_t max_n) {
    const Token open = toks_[i_ - 1];
    while (true) {
      if (at_end() || peek().kind != TK::kInt) {
        error(cur_or_eol(), "expected a positive integer extent");
        return false;
      }
      const Token& t = peek();
      if (t.int_value <= 0 || t.int_value > kMaxExtent) {
        error(t, "an extent must be between 1 and 2^40, not " + t.text);
        return false;
      }
      out.push_back(t.int_value);
      ++i_;
      if (is_punct(",")) {
        ++i_;
        continue;
      }
      if (!expect_punct("]", "to close the shape")) return false;
      break;
    }
    if (out.size() < min_n || out.size() > max_n) {
      error(span(open.begin, toks_[i_ - 1].end),
            "expected " + std::to_string(min_n) + (min_n == max_n ? "" : " to " + std::to_string(max_n)) +
                " extents, got " + std::to_string(out.size()));
      return false;
    }
    return true;
  }

  // A register type: i64 | f32 | bool | DTYPE[rows, cols].
  bool reg_type(RegType& out) {
    Token t;
    DType d;
    if (!at_end() && peek().kind == TK::kIdent && peek().text == "bool" &&
        !(i_ + 1 < toks_.size() && toks_[i_ + 1].text == "[")) {
      ++i_;
      out = RegType::scalar(RegType::kBool);
      return true;
    }
    if (!dtype(d, &t)) return false;
    if (!is_punct("[")) {
      if (d == DType::kI64) {
        out = RegType::scalar(RegType::kInt);
      } else if (d == DType::kF32) {
        out = RegType::scalar(RegType::kFloat);
      } else {
        error(t, std::string("a scalar register is i64, f32 or bool, not ") + dtype_name(d) +
                     "; a tile type needs its shape, e.g. " + dtype_name(d) + "[16, 64]");
        return false;
      }
      return true;
    }
    ++i_;
    std::vector<int64_t> shape;
    if (!extents(shape, 2, 2)) return false;
    if (!supported_dtype(d)) {
      error(t, std::string(dtype_name(d)) +
                   " tiles are not supported yet; use f32, f16, bf16, i8, i16, i32, i64 or u8");
      return false;
    }
    if (shape[0] * shape[1] > kMaxTileElements) {
      error(t, "a tile of " + std::to_string(shape[0]) + " x " + std::to_string(shape[1]) +
                   " elements is too large (at most 2^24)");
      return false;
    }
    out = RegType::tile(d, shape[0], shape[1]);
    return true;
  }

  // ------------------------------------------------------------ operands
  bool operand(Operand& o, int depth = 0) {
    if (at_end()) {
      error(eol_token(), "expected an operand");
      return false;
    }
    const Token& t = peek();
    o.span = span(t);
    switch (t.kind) {
      case TK::kReg: {
        const int r = unit_.find_reg(t.text);
        if (r < 0) {
          error(t, "register '%" + t.text + "' is used before it is defined");
          return false;
        }
        o.kind = Operand::kReg;
        o.reg = r;
        ++i_;
        return true;
      }
      case TK::kInt:
        o.kind = Operand::kInt;
        o.int_value = t.int_value;
        ++i_;
        return true;
      case TK::kFloat:
        o.kind = Operand::kFloat;
        o.float_value = t.float_value;
        ++i_;
        return true;
      case TK::kIdent: {
        ++i_;
        if (is_punct("[")) {
          const int p = unit_.find_param(t.text);
          if (p < 0 || unit_.params[static_cast<size_t>(p)].kind == ParamKind::kScalar) {
            error(t, p < 0 ? "unknown tensor or window '" + t.text + "'"
                           : "scalar parameter '" + t.text + "' cannot be indexed");
            return false;
          }
          if (depth > 0) {
            error(t, "a region offset must be a register, an integer or a scalar parameter");
            return false;
          }
          ++i_;
          o.kind = Operand::kRegion;
          o.param = p;
          while (true) {
            Operand x;
            if (!operand(x, depth + 1)) return false;
            o.index.push_back(std::move(x));
            if (is_punct(",")) {
              ++i_;
              continue;
            }
            if (!expect_punct("]", "to close the offsets")) return false;
            break;
          }
          o.span = span(t.begin, toks_[i_ - 1].end);
          return true;
        }
        // A bare name: resolved by the instruction (a parameter or an option word).
        o.kind = Operand::kOption;
        o.option = t.text;
        return true;
      }
      default:
        error(t, "expected an operand (a %register, a number, a parameter or a region), not '" +
                     t.text + "'");
        return false;
    }
  }

  // ------------------------------------------------------------ instructions
  void instruction() {
    Inst inst;
    inst.line = line_;
    inst.source_line = loc_;
    inst.span = span(line_begin_ + static_cast<uint32_t>(first_col()), toks_.back().end);
    const Token first = toks_[0];
    // Block structure.
    if (first.kind == TK::kIdent && (first.text == "end" || first.text == "else")) {
      i_ = 1;
      if (!expect_line_end()) return;
      if (blocks_.size() <= 1) {
        error(first, "'" + first.text + "' without an open 'for' or 'if'");
        return;
      }
      Block& b = blocks_.back();
      if (first.text == "end") {
        blocks_.pop_back();
        return;
      }
      if (b.owner->op != Opcode::kIf || b.in_else) {
        error(first, b.owner->op == Opcode::kIf ? "a second 'else' for one 'if'"
                                                : "'else' inside a 'for' block");
        return;
      }
      b.owner->has_else = true;
      b.in_else = true;
      b.insts = &b.owner->else_body;
      return;
    }
    if (first.kind == TK::kIdent && first.text == "for") {
      for_inst(inst);
      return;
    }
    if (first.kind == TK::kIdent && first.text == "if") {
      i_ = 1;
      Operand c;
      if (!operand(c)) return;
      if (!expect_line_end()) return;
      if (!is_bool(c)) {
        error(c.span, "the condition of 'if' must be a bool register");
        return;
      }
      inst.op = Opcode::kIf;
      inst.args.push_back(std::move(c));
      push_block(std::move(inst), first);
      return;
    }
    // [%dst:type =] opcode operands
    i_ = 0;
    Token dst_tok;
    RegType dst_type;
    bool has_dst = false;
    if (first.kind == TK::kReg) {
      dst_tok = first;
      i_ = 1;
      if (!expect_punct(":", "and the register's type after '%" + first.text + "'")) return;
      if (!reg_type(dst_type)) return;
      if (!expect_punct("=", "after the register's type")) return;
      has_dst = true;
    }
    std::string opname;
    Token op_tok;
    if (!expect_ident(opname, "an instruction", &op_tok)) return;
    std::optional<Opcode> op = opcode_from_name(opname);
    if (!op || *op == Opcode::kFor || *op == Opcode::kIf) {
      error(op_tok, "unknown instruction '" + opname + "'");
      return;
    }
    inst.op = *op;
    if (!at_end()) {
      while (true) {
        Operand o;
        if (!operand(o)) return;
        inst.args.push_back(std::move(o));
        if (at_end()) break;
        if (!expect_punct(",", "between operands")) return;
      }
    }
    const bool defines = defines_register(inst.op);
    if (defines && !has_dst) {
      error(op_tok, std::string("'") + opname + "' defines a register: write '%name:type = " +
                        opname + " ...'");
      return;
    }
    if (!defines && has_dst) {
      error(dst_tok, std::string("'") + opname + "' does not define a register");
      return;
    }
    if (has_dst) {
      const int r = declare(dst_tok, dst_type);
      if (r < 0) return;
      inst.dst = r;
    }
    if (!verify(inst, op_tok)) return;
    blocks_.back().insts->push_back(std::move(inst));
  }

  size_t first_col() const { return toks_.empty() ? 0 : toks_[0].begin - line_begin_; }

  void for_inst(Inst& inst) {
    const Token first = toks_[0];
    i_ = 1;
    if (at_end() || peek().kind != TK::kReg) {
      error(cur_or_eol(), "expected the loop register after 'for', e.g. 'for %i = 0 to 8 step 1'");
      return;
    }
    const Token reg_tok = peek();
    ++i_;
    if (!expect_punct("=", "after the loop register")) return;
    Operand lo, hi, step;
    if (!operand(lo)) return;
    std::string word;
    Token w;
    if (!expect_ident(word, "'to' after the lower bound", &w)) return;
    if (word != "to") {
      error(w, "expected 'to' after the lower bound");
      return;
    }
    if (!operand(hi)) return;
    if (!expect_ident(word, "'step' after the upper bound", &w)) return;
    if (word != "step") {
      error(w, "expected 'step' after the upper bound");
      return;
    }
    if (!operand(step)) return;
    if (!expect_line_end()) return;
    for (Operand* o : {&lo, &hi, &step})
      if (!int_operand(*o, "a loop bound")) return;
    if (step.kind == Operand::kInt && step.int_value <= 0) {
      error(step.span, "the loop step must be positive, not " + std::to_string(step.int_value));
      return;
    }
    const int r = declare(reg_tok, RegType::scalar(RegType::kInt));
    if (r < 0) return;
    inst.op = Opcode::kFor;
    inst.dst = r;
    inst.args = {std::move(lo), std::move(hi), std::move(step)};
    push_block(std::move(inst), first);
  }

  void push_block(Inst inst, const Token& first) {
    if (blocks_.size() > kMaxNesting) {
      error(first, "blocks nested deeper than " + std::to_string(kMaxNesting));
      return;
    }
    std::vector<Inst>* into = blocks_.back().insts;
    into->push_back(std::move(inst));
    Inst* owner = &into->back();
    blocks_.push_back(Block{&owner->body, owner});
  }

  // Declares %name (or checks its type against its earlier definition).
  int declare(const Token& t, const RegType& type) {
    const int r = unit_.find_reg(t.text);
    if (r >= 0) {
      const RegType& old = unit_.regs[static_cast<size_t>(r)].type;
      if (!(old == type)) {
        error(t, "register '%" + t.text + "' is " + to_string(old) + ", not " + to_string(type) +
                     "; a register keeps the type of its first definition");
        return -1;
      }
      return r;
    }
    unit_.regs.push_back(Register{t.text, type});
    return static_cast<int>(unit_.regs.size()) - 1;
  }

  static bool defines_register(Opcode op) {
    switch (op) {
      case Opcode::kTStore:
      case Opcode::kTRemoteStore:
      case Opcode::kPut:
      case Opcode::kGet:
      case Opcode::kNotify:
      case Opcode::kWait:
        return false;
      default:
        return true;
    }
  }

  void finish() {
    if (state_ == kBeforeKernel) {
      error(Span{file_, 0, 0}, "empty listing: expected '.kernel <name> aiv|aic'");
      return;
    }
    if (state_ != kAfterEnd) {
      uint32_t e = static_cast<uint32_t>(text_.size());
      if (e > 0 && text_[e - 1] == '\n') --e;  // the end of the last line
      if (blocks_.size() > 1) {
        error(span(e, e), std::string("the listing ends inside an open '") +
                              opcode_name(blocks_.back().owner->op) + "' block");
        diags_.note(blocks_.back().owner->span, "the block opened here");
      } else {
        error(span(e, e), "the listing ends without '.end'");
      }
    }
  }

  // ------------------------------------------------------------ checks
  const RegType* reg_of(const Operand& o) const {
    return o.kind == Operand::kReg ? &unit_.regs[static_cast<size_t>(o.reg)].type : nullptr;
  }
  const Param* scalar_param(Operand& o) {
    if (o.kind != Operand::kOption && o.kind != Operand::kParam) return nullptr;
    const int p = o.kind == Operand::kParam ? o.param : unit_.find_param(o.option);
    if (p < 0 || unit_.params[static_cast<size_t>(p)].kind != ParamKind::kScalar) return nullptr;
    o.kind = Operand::kParam;
    o.param = p;
    return &unit_.params[static_cast<size_t>(p)];
  }
  bool is_bool(const Operand& o) const {
    const RegType* t = reg_of(o);
    return t && t->kind == RegType::kBool;
  }
  // 0: not a scalar, 1: int, 2: float.
  int scalar_class(Operand& o) {
    if (o.kind == Operand::kInt) return 1;
    if (o.kind == Operand::kFloat) return 2;
    if (const RegType* t = reg_of(o))
      return t->kind == RegType::kInt ? 1 : t->kind == RegType::kFloat ? 2 : 0;
    if (const Param* p = scalar_param(o)) return p->dtype == DType::kF32 ? 2 : 1;
    return 0;
  }
  bool int_operand(Operand& o, const std::string& what) {
    if (scalar_class(o) == 1) return true;
    error(o.span, what + " must be an integer (an i64 register, an integer or an integer scalar "
                         "parameter)");
    return false;
  }
  bool num_operand(Operand& o, const std::string& what) {
    if (scalar_class(o) != 0) return true;
    error(o.span, what + " must be a number (a scalar register, a literal or a scalar parameter)");
    return false;
  }
  const RegType* tile_operand(const Operand& o, const std::string& what) {
    const RegType* t = reg_of(o);
    if (t && t->is_tile()) return t;
    error(o.span, what + " must be a tile register");
    return nullptr;
  }
  bool option(Operand& o, std::initializer_list<const char*> allowed, const std::string& what) {
    std::string list;
    for (const char* a : allowed) {
      if (o.kind == Operand::kOption && o.option == a) return true;
      list += (list.empty() ? "" : ", ") + std::string(a);
    }
    error(o.span, what + " must be one of " + list);
    return false;
  }
  // A region operand of a tensor/window param, offsets integers, inside the
  // parameter wherever an offset is constant, for a [rows, cols] block.
  const Param* region(Operand& o, bool window_only, int64_t rows, int64_t cols,
                      const std::string& what) {
    if (o.kind != Operand::kRegion) {
      error(o.span, what + " must be a region 'name[offsets...]' of a " +
                        (window_only ? "window" : "tensor or window"));
      return nullptr;
    }
    const Param& p = unit_.params[static_cast<size_t>(o.param)];
    if (window_only && p.kind != ParamKind::kWindow) {
      error(o.span, what + " must be a region of a window, and '" + p.name + "' is a tensor");
      return nullptr;
    }
    if (o.index.size() != p.shape.size()) {
      error(o.span, "'" + p.name + "' has " + std::to_string(p.shape.size()) +
                        " dimension(s), so its region needs as many offsets, not " +
                        std::to_string(o.index.size()));
      return nullptr;
    }
    const size_t n = p.shape.size();
    if (n == 1 && rows != 1) {
      error(o.span, "a [" + std::to_string(rows) + ", " + std::to_string(cols) +
                        "] tile does not fit the 1-D '" + p.name + "'");
      return nullptr;
    }
    for (size_t d = 0; d < n; ++d) {
      Operand& x = o.index[d];
      if (!int_operand(x, "an offset")) return nullptr;
      const int64_t ext = d + 1 == n ? cols : d + 2 == n ? rows : 1;
      if (ext > p.shape[d]) {
        error(o.span, "the tile's extent " + std::to_string(ext) + " exceeds dimension " +
                          std::to_string(d) + " of '" + p.name + "' (" +
                          std::to_string(p.shape[d]) + ")");
        return nullptr;
      }
      if (x.kind == Operand::kInt && (x.int_value < 0 || x.int_value > p.shape[d] - ext)) {
        error(x.span, "offset " + std::to_string(x.int_value) + " puts the region outside '" +
                          p.name + "' (dimension " + std::to_string(d) + " has " +
                          std::to_string(p.shape[d]) + ", the tile needs " + std::to_string(ext) +
                          ")");
        return nullptr;
      }
    }
    return &p;
  }
  const Param* whole_param(Operand& o, const std::string& what) {
    const int p = o.kind == Operand::kOption ? unit_.find_param(o.option) : -1;
    if (p < 0 || unit_.params[static_cast<size_t>(p)].kind == ParamKind::kScalar) {
      error(o.span, what + " must name a tensor or window parameter");
      return nullptr;
    }
    o.kind = Operand::kParam;
    o.param = p;
    return &unit_.params[static_cast<size_t>(p)];
  }
  bool arity(const Inst& inst, const Token& op_tok, size_t lo, size_t hi) {
    if (inst.args.size() >= lo && inst.args.size() <= hi) return true;
    error(op_tok, std::string("'") + opcode_name(inst.op) + "' takes " + std::to_string(lo) +
                      (lo == hi ? "" : " or " + std::to_string(hi)) + " operand(s), not " +
                      std::to_string(inst.args.size()));
    return false;
  }

  bool verify(Inst& inst, const Token& op_tok) {
    const RegType dst = inst.dst >= 0 ? unit_.regs[static_cast<size_t>(inst.dst)].type : RegType{};
    if (!half_ok(inst, op_tok, dst)) return false;
    auto dst_is = [&](bool ok, const std::string& want) {
      if (ok) return true;
      error(op_tok, std::string("'") + opcode_name(inst.op) + "' defines " + want + ", but '%" +
                        unit_.regs[static_cast<size_t>(inst.dst)].name + "' is " + to_string(dst));
      return false;
    };
    auto& a = inst.args;
    switch (inst.op) {
      case Opcode::kRank:
      case Opcode::kWorld:
        return arity(inst, op_tok, 0, 0) && dst_is(dst.kind == RegType::kInt, "an i64");
      case Opcode::kMov: {
        if (!arity(inst, op_tok, 1, 1) || !dst_is(!dst.is_tile(), "a scalar")) return false;
        if (dst.kind == RegType::kBool) {
          if (is_bool(a[0])) return true;
          error(a[0].span, "a bool register can only be copied from a bool register");
          return false;
        }
        const int c = scalar_class(a[0]);
        if (c == 0 || (dst.kind == RegType::kInt && c != 1)) {
          error(a[0].span, dst.kind == RegType::kInt ? "expected an integer operand"
                                                     : "expected a number");
          return false;
        }
        return true;
      }
      case Opcode::kAdd:
      case Opcode::kSub:
      case Opcode::kMul:
      case Opcode::kDiv:
      case Opcode::kMin:
      case Opcode::kMax:
      case Opcode::kRem: {
        if (!arity(inst, op_tok, 2, 2) || !dst_is(dst.is_scalar(), "a number (i64 or f32)"))
          return false;
        const bool ints = dst.kind == RegType::kInt || inst.op == Opcode::kRem;
        if (inst.op == Opcode::kRem && !dst_is(dst.kind == RegType::kInt, "an i64")) return false;
        for (Operand& x : a)
          if (ints ? !int_operand(x, "an operand") : !num_operand(x, "an operand")) return false;
        return true;
      }
      case Opcode::kNeg:
        if (!arity(inst, op_tok, 1, 1) || !dst_is(dst.is_scalar(), "a number (i64 or f32)"))
          return false;
        return dst.kind == RegType::kInt ? int_operand(a[0], "the operand")
                                         : num_operand(a[0], "the operand");
      case Opcode::kNot:
      case Opcode::kAnd:
      case Opcode::kOr:
        if (!arity(inst, op_tok, inst.op == Opcode::kNot ? 1 : 2, inst.op == Opcode::kNot ? 1 : 2) ||
            !dst_is(dst.kind == RegType::kBool, "a bool"))
          return false;
        for (Operand& x : a)
          if (!is_bool(x)) {
            error(x.span, "expected a bool register");
            return false;
          }
        return true;
      case Opcode::kEq:
      case Opcode::kNe:
      case Opcode::kLt:
      case Opcode::kLe:
      case Opcode::kGt:
      case Opcode::kGe:
        if (!arity(inst, op_tok, 2, 2) || !dst_is(dst.kind == RegType::kBool, "a bool"))
          return false;
        return num_operand(a[0], "a compared operand") && num_operand(a[1], "a compared operand");
      case Opcode::kItof:
        return arity(inst, op_tok, 1, 1) && dst_is(dst.kind == RegType::kFloat, "an f32") &&
               int_operand(a[0], "the operand");
      case Opcode::kTLoad: {
        if (!arity(inst, op_tok, 1, 1) || !dst_is(dst.is_tile(), "a tile")) return false;
        const Param* p = region(a[0], false, dst.rows, dst.cols, "the source");
        if (!p) return false;
        if (p->kind == ParamKind::kTensor && p->dir == Direction::kOut) {
          error(a[0].span, "cannot load from 'out' tensor '" + p->name + "'");
          return false;
        }
        return dtype_match(a[0].span, p->dtype, dst.dtype, "'" + p->name + "'");
      }
      case Opcode::kTRemoteLoad: {
        if (!arity(inst, op_tok, 2, 2) || !dst_is(dst.is_tile(), "a tile")) return false;
        const Param* p = region(a[0], true, dst.rows, dst.cols, "the source");
        if (!p || !int_operand(a[1], "the peer rank")) return false;
        return dtype_match(a[0].span, p->dtype, dst.dtype, "'" + p->name + "'");
      }
      case Opcode::kTStore:
      case Opcode::kTRemoteStore: {
        const bool remote = inst.op == Opcode::kTRemoteStore;
        if (!arity(inst, op_tok, remote ? 4 : 2, remote ? 4 : 2)) return false;
        const RegType* t = tile_operand(a[0], "the stored value");
        if (!t) return false;
        const Param* p = region(a[1], remote, t->rows, t->cols, "the destination");
        if (!p) return false;
        if (p->kind == ParamKind::kTensor && p->dir == Direction::kIn) {
          error(a[1].span, "cannot store to 'in' tensor '" + p->name + "'");
          return false;
        }
        if (remote &&
            (!int_operand(a[2], "the peer rank") || !option(a[3], {"set", "add"}, "the store operation")))
          return false;
        return dtype_match(a[1].span, p->dtype, t->dtype, "'" + p->name + "'");
      }
      case Opcode::kTMov:
      case Opcode::kTNeg:
      case Opcode::kTExp:
      case Opcode::kTSqrt: {
        if (!arity(inst, op_tok, 1, 1) || !dst_is(dst.is_tile(), "a tile")) return false;
        const RegType* t = tile_operand(a[0], "the operand");
        if (!t) return false;
        if (!(*t == dst)) {
          error(a[0].span, "the operand is " + to_string(*t) + ", the result " + to_string(dst) +
                               "; they must agree");
          return false;
        }
        if ((inst.op == Opcode::kTExp || inst.op == Opcode::kTSqrt) && dst.dtype != DType::kF32 &&
            !half_dtype(dst.dtype)) {
          error(op_tok, std::string("'") + opcode_name(inst.op) + "' needs an f32, f16 or bf16 tile");
          return false;
        }
        return true;
      }
      case Opcode::kTAdd:
      case Opcode::kTSub:
      case Opcode::kTMul:
      case Opcode::kTDiv:
      case Opcode::kTMax:
      case Opcode::kTMin: {
        if (!arity(inst, op_tok, 2, 2) || !dst_is(dst.is_tile(), "a tile")) return false;
        const RegType* t = tile_operand(a[0], "the first operand");
        if (!t) return false;
        if (!(*t == dst)) {
          error(a[0].span, "the first operand is " + to_string(*t) + ", the result " +
                               to_string(dst) + "; they must agree");
          return false;
        }
        if (const RegType* b = reg_of(a[1]); b && b->is_tile()) {
          const bool ok = b->dtype == dst.dtype &&
                          ((b->rows == dst.rows && b->cols == dst.cols) ||
                           (b->rows == dst.rows && b->cols == 1) ||
                           (b->rows == 1 && b->cols == dst.cols));
          if (!ok) {
            error(a[1].span, "the second operand " + to_string(*b) + " must be " + to_string(dst) +
                                 ", or of its dtype [" + std::to_string(dst.rows) + ", 1] or [1, " +
                                 std::to_string(dst.cols) + "] (broadcast)");
            return false;
          }
          return true;
        }
        const int c = scalar_class(a[1]);
        if (c == 0) {
          error(a[1].span, "the second operand must be a tile or a number");
          return false;
        }
        if (c == 2 && dst.dtype != DType::kF32 && !half_dtype(dst.dtype)) {
          error(a[1].span, "a float operand needs an f32, f16 or bf16 tile");
          return false;
        }
        return true;
      }
      case Opcode::kTCvt: {
        if (!arity(inst, op_tok, 1, 1) || !dst_is(dst.is_tile(), "a tile")) return false;
        const RegType* t = tile_operand(a[0], "the operand");
        if (!t) return false;
        if (t->rows != dst.rows || t->cols != dst.cols) {
          error(a[0].span, "'tcvt' keeps the shape: the operand is " + to_string(*t) +
                               ", the result " + to_string(dst));
          return false;
        }
        return true;
      }
      case Opcode::kTRowSum:
      case Opcode::kTRowMax: {
        if (!arity(inst, op_tok, 1, 1) || !dst_is(dst.is_tile(), "a tile")) return false;
        const RegType* t = tile_operand(a[0], "the operand");
        if (!t) return false;
        if (t->dtype != dst.dtype || t->rows != dst.rows || dst.cols != 1) {
          error(a[0].span, "the result of reducing " + to_string(*t) + " is " +
                               dtype_name(t->dtype) + "[" + std::to_string(t->rows) +
                               ", 1], not " + to_string(dst));
          return false;
        }
        return true;
      }
      case Opcode::kTMatmul: {
        if (!arity(inst, op_tok, 2, 3) || !dst_is(dst.is_tile(), "a tile")) return false;
        const RegType* x = tile_operand(a[0], "the left operand");
        const RegType* y = x ? tile_operand(a[1], "the right operand") : nullptr;
        if (!x || !y) return false;
        if (x->dtype != y->dtype || x->cols != y->rows) {
          error(a[1].span, "matmul of " + to_string(*x) + " and " + to_string(*y) +
                               ": the dtypes must agree and the columns of the left equal the "
                               "rows of the right");
          return false;
        }
        const DType out = x->dtype == DType::kI8 ? DType::kI32 : DType::kF32;
        const RegType want = RegType::tile(out, x->rows, y->cols);
        if (!dst_is(dst == want, to_string(want))) return false;
        if (a[0].reg == inst.dst || a[1].reg == inst.dst) {
          error(op_tok, "the result of 'tmatmul' must not be one of its operands");
          return false;
        }
        if (a.size() == 3) {
          const RegType* acc = tile_operand(a[2], "the accumulator");
          if (!acc) return false;
          if (!(*acc == want)) {
            error(a[2].span, "the accumulator must be " + to_string(want));
            return false;
          }
        }
        return true;
      }
      case Opcode::kTFull: {
        if (!arity(inst, op_tok, 1, 1) || !dst_is(dst.is_tile(), "a tile")) return false;
        return num_operand(a[0], "the fill value");
      }
      case Opcode::kPut:
      case Opcode::kGet: {
        const bool is_put = inst.op == Opcode::kPut;
        if (!arity(inst, op_tok, 3, 3)) return false;
        const Param* local = whole_param(a[0], is_put ? "the source" : "the destination");
        if (!local) return false;
        if (local->kind == ParamKind::kTensor &&
            local->dir == (is_put ? Direction::kOut : Direction::kIn)) {
          error(a[0].span, std::string(is_put ? "cannot read 'out'" : "cannot write 'in'") +
                               " tensor '" + local->name + "'");
          return false;
        }
        if (a[1].kind != Operand::kRegion ||
            unit_.params[static_cast<size_t>(a[1].param)].kind != ParamKind::kWindow) {
          error(a[1].span, "the remote side must be a region 'window[offsets...]' of a window");
          return false;
        }
        const Param& w = unit_.params[static_cast<size_t>(a[1].param)];
        if (w.shape.size() != local->shape.size() || w.dtype != local->dtype) {
          error(a[0].span, "'" + local->name + "' and window '" + w.name +
                               "' must have the same dtype and number of dimensions");
          return false;
        }
        if (a[1].index.size() != w.shape.size()) {
          error(a[1].span, "window '" + w.name + "' needs " + std::to_string(w.shape.size()) +
                               " offset(s)");
          return false;
        }
        for (size_t d = 0; d < w.shape.size(); ++d) {
          Operand& x = a[1].index[d];
          if (!int_operand(x, "an offset")) return false;
          if (local->shape[d] > w.shape[d] ||
              (x.kind == Operand::kInt &&
               (x.int_value < 0 || x.int_value > w.shape[d] - local->shape[d]))) {
            error(x.span, "'" + local->name + "' does not fit window '" + w.name +
                              "' at this offset (dimension " + std::to_string(d) + ")");
            return false;
          }
        }
        return int_operand(a[2], "the peer rank");
      }
      case Opcode::kNotify: {
        if (!arity(inst, op_tok, 4, 4)) return false;
        const Param* w = region(a[0], true, 1, 1, "the signal cell");
        if (!w || !signal(*w, a[0])) return false;
        return int_operand(a[1], "the peer rank") && int_operand(a[2], "the value") &&
               option(a[3], {"set", "add"}, "the notify operation");
      }
      case Opcode::kWait: {
        if (!arity(inst, op_tok, 3, 3)) return false;
        const Param* w = region(a[0], true, 1, 1, "the signal cell");
        if (!w || !signal(*w, a[0])) return false;
        return option(a[1], {"eq", "ne", "gt", "ge", "lt", "le"}, "the comparison") &&
               int_operand(a[2], "the expected value");
      }
      case Opcode::kFor:
      case Opcode::kIf:
        return false;
    }
    return false;
  }

  // f16/bf16 tiles support every tile instruction (computed in f32, rounded
  // to nearest even per result) except an atomic 'tremote_store ..., add'.
  bool half_ok(const Inst& inst, const Token& op_tok, const RegType& /*dst*/) {
    switch (inst.op) {
      case Opcode::kTRemoteStore:
        if (inst.args.size() == 4 && inst.args[3].kind == Operand::kOption &&
            inst.args[3].option == "add" && inst.args[0].kind == Operand::kReg &&
            half_dtype(unit_.regs[static_cast<size_t>(inst.args[0].reg)].type.dtype)) {
          error(op_tok, "'tremote_store ..., add' of f16/bf16 tiles is not supported yet");
          return false;
        }
        return true;
      default:
        return true;
    }
  }

  bool signal(const Param& w, const Operand& o) {
    if (w.dtype == DType::kI32) return true;
    error(o.span, "signal cells live in i32 windows; '" + w.name + "' holds " + dtype_name(w.dtype));
    return false;
  }
  bool dtype_match(Span s, DType param, DType tile, const std::string& what) {
    if (param == tile) return true;
    error(s, what + " holds " + dtype_name(param) + ", the tile is " + dtype_name(tile) +
                 "; convert with tcvt");
    return false;
  }

  enum State { kBeforeKernel, kParams, kBody, kAfterEnd };

  int32_t file_;
  const std::string& text_;
  DiagnosticEngine& diags_;
  Unit unit_;
  State state_ = kBeforeKernel;
  Token kernel_tok_;
  std::vector<Block> blocks_;
  std::vector<Token> toks_;
  size_t i_ = 0;
  Token eol_;
  int line_ = 0;
  int loc_ = 0;  // the last .loc: the program-source line of the instructions after it
  uint32_t line_begin_ = 0, line_end_ = 0;
};

}  // namespace

std::optional<Unit> parse(const SourceManager& sources, int32_t file, DiagnosticEngine& diags) {
  Parser parser(sources, file, diags);
  return parser.run();
}

}  // namespace pypto::compiler::pto
