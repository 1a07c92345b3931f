#include "compiler/frontend/parser.h"

#include <algorithm>
#include <utility>

namespace pypto::compiler {

namespace {

class Parser {
 public:
  Parser(const std::vector<Token>& tokens, int32_t file_id, DiagnosticEngine& diags)
      : toks_(tokens), diags_(diags) {
    module_.file = file_id;
  }

  Module run() {
    while (!at(Tok::kEof)) {
      if (!top_level()) sync_top_level();
    }
    return std::move(module_);
  }

 private:
  // ------------------------------------------------------------------ tokens
  const Token& cur() const { return toks_[pos_]; }
  const Token& peek(size_t ahead) const { return toks_[std::min(pos_ + ahead, toks_.size() - 1)]; }
  bool at(Tok kind) const { return cur().kind == kind; }
  const Token& advance() {
    const Token& t = toks_[pos_];
    if (pos_ + 1 < toks_.size()) ++pos_;
    return t;
  }
  // A contextual keyword: an identifier with this spelling.
  bool at_word(std::string_view word) const { return at(Tok::kIdent) && cur().text == word; }
  bool accept(Tok kind) {
    if (!at(kind)) return false;
    advance();
    return true;
  }
  // Reports "expected X <context>, found Y" at the current token.
  bool expect(Tok kind, const char* context) {
    if (accept(kind)) return true;
    error_here(std::string("expected ") + tok_name(kind) + " " + context);
    return false;
  }
  void error_here(const std::string& message) {
    diags_.error(cur().span, message + ", found " + found());
  }
  std::string found() const {
    const Token& t = cur();
    if (t.kind == Tok::kEof) return "end of file";
    return "'" + std::string(t.text) + "'";
  }
  Span prev_span() const { return toks_[pos_ > 0 ? pos_ - 1 : 0].span; }

  // Skips to the next top-level declaration keyword outside any braces.
  void sync_top_level() {
    int depth = 0;
    while (!at(Tok::kEof)) {
      const Tok k = cur().kind;
      if (depth == 0 &&
          (k == Tok::kKernel || k == Tok::kChip || k == Tok::kHost || k == Tok::kConst ||
           k == Tok::kImport) &&
          cur().newline_before) {
        return;
      }
      if (k == Tok::kLBrace) ++depth;
      if (k == Tok::kRBrace && depth > 0) --depth;
      advance();
    }
  }

  // Skips the rest of a broken statement: past a ';', or up to a '}' that
  // closes the enclosing block, or to the start of the next line's statement.
  void sync_stmt() {
    int depth = 0;
    bool first = true;
    while (!at(Tok::kEof)) {
      const Tok k = cur().kind;
      if (depth == 0) {
        if (k == Tok::kSemi) {
          advance();
          return;
        }
        if (k == Tok::kRBrace) return;
        if (!first && cur().newline_before &&
            (k == Tok::kLet || k == Tok::kFor || k == Tok::kIf || k == Tok::kConst ||
             k == Tok::kIdent)) {
          return;
        }
        // A new top-level declaration means the block was never closed.
        if (!first && cur().newline_before &&
            (k == Tok::kKernel || k == Tok::kChip || k == Tok::kHost || k == Tok::kImport)) {
          return;
        }
      }
      if (k == Tok::kLBrace) ++depth;
      if (k == Tok::kRBrace) --depth;
      advance();
      first = false;
    }
  }

  // Guards recursion; false (after one report) when nesting is too deep.
  struct DepthGuard {
    Parser& p;
    explicit DepthGuard(Parser& parser) : p(parser) { ++p.depth_; }
    ~DepthGuard() { --p.depth_; }
    bool ok() {
      if (p.depth_ <= kMaxNesting) return true;
      if (!p.reported_depth_) {
        p.diags_.error(p.cur().span, "nesting is too deep (more than " +
                                         std::to_string(kMaxNesting) + " levels)");
        p.reported_depth_ = true;
      }
      return false;
    }
  };

  // ------------------------------------------------------------- top level
  bool top_level() {
    switch (cur().kind) {
      case Tok::kImport: {
        const Span start = advance().span;
        if (!at(Tok::kString)) {
          error_here("expected a file name in quotes after 'import'");
          return false;
        }
        const Token& s = advance();
        module_.imports.push_back(Import{s.string_value, start.to(s.span)});
        return true;
      }
      case Tok::kConst: {
        advance();
        ConstDecl c;
        if (!at(Tok::kIdent)) {
          error_here("expected a name after 'const'");
          return false;
        }
        c.name = std::string(cur().text);
        c.name_span = advance().span;
        if (!expect(Tok::kAssign, "after the constant's name")) return false;
        c.value = expr();
        if (!c.value) return false;
        module_.consts.push_back(std::move(c));
        return true;
      }
      case Tok::kKernel:
      case Tok::kChip:
      case Tok::kHost:
        return function();
      default:
        error_here("expected 'kernel', 'chip', 'host', 'const' or 'import' at top level");
        return false;
    }
  }

  bool function() {
    Function f;
    const Span start = cur().span;
    const Tok k = advance().kind;
    f.kind = k == Tok::kKernel ? FuncKind::kKernel
             : k == Tok::kChip ? FuncKind::kChip
                               : FuncKind::kHost;
    if (f.kind == FuncKind::kKernel) {
      if (at(Tok::kAic)) {
        f.core = CoreType::kAic;
      } else if (at(Tok::kAiv)) {
        f.core = CoreType::kAiv;
      } else {
        error_here("expected the core type 'aic' (cube) or 'aiv' (vector) after 'kernel'");
        return false;
      }
      advance();
    }
    if (!at(Tok::kIdent)) {
      error_here(std::string("expected the ") + func_kind_name(f.kind) + "'s name");
      return false;
    }
    f.name = std::string(cur().text);
    f.name_span = advance().span;
    if (accept(Tok::kLt)) {
      // Shape parameters: `f<R, C>(...)`, bound at each call from the arguments.
      do {
        if (!at(Tok::kIdent)) {
          error_here("expected the name of a shape parameter");
          return false;
        }
        f.shape_params.push_back(ShapeParam{std::string(cur().text), cur().span});
        advance();
      } while (accept(Tok::kComma));
      if (!expect(Tok::kGt, "to close the shape parameters")) return false;
    }
    if (!expect(Tok::kLParen, "to open the parameter list")) return false;
    while (!at(Tok::kRParen)) {
      Param p;
      if (!param(p)) return false;
      f.params.push_back(std::move(p));
      if (!accept(Tok::kComma)) break;
    }
    if (!expect(Tok::kRParen, "to close the parameter list")) return false;
    f.span = start.to(prev_span());
    if (!at(Tok::kLBrace)) {
      error_here(std::string("expected '{' to open the body of '") + f.name + "'");
      return false;
    }
    f.body = block();
    module_.functions.push_back(std::move(f));
    return true;
  }

  bool param(Param& p) {
    if (!at(Tok::kIdent)) {
      error_here("expected a parameter name");
      return false;
    }
    p.name = std::string(cur().text);
    p.span = advance().span;
    if (!expect(Tok::kColon, "after the parameter name")) return false;
    const Span type_start = cur().span;
    if (at_word("window")) {
      advance();
      p.kind = ParamKind::kWindow;
    } else if (at(Tok::kIn) || at_word("out") || at_word("inout")) {
      const std::string_view d = advance().text;
      p.kind = ParamKind::kTensor;
      p.dir = d == "in" ? Direction::kIn : d == "out" ? Direction::kOut : Direction::kInOut;
    } else {
      p.kind = ParamKind::kScalar;
    }
    if (!at(Tok::kDType)) {
      error_here("expected a dtype (" + std::string(dtype_names()) + ") in the type of '" + p.name +
                 "'");
      return false;
    }
    p.dtype = parse_dtype(cur().text).value_or(DType::kF32);
    advance();
    if (at(Tok::kLBracket)) {
      if (p.kind == ParamKind::kScalar) {
        diags_.error(type_start.to(cur().span),
                     "tensor parameter '" + p.name +
                         "' needs a direction: 'in', 'out' or 'inout' (or 'window')");
        return false;
      }
      advance();
      if (!extents(p.dims, "the shape of '" + p.name + "'")) return false;
    } else if (p.kind != ParamKind::kScalar) {
      error_here("expected '[' and the shape of '" + p.name + "'");
      return false;
    }
    p.type_span = type_start.to(prev_span());
    if (at_word("at")) {  // in place: `x: inout f32[R, C] at w`
      advance();
      if (!at(Tok::kIdent)) {
        error_here("expected the name of a window parameter after 'at' in the type of '" +
                   p.name + "'");
        return false;
      }
      p.at = std::string(cur().text);
      p.at_span = advance().span;
    }
    return true;
  }

  // After '[': expr {, expr} ']' (at least one).
  bool extents(std::vector<ExprPtr>& out, const std::string& context) {  // context: "the type"
    if (at(Tok::kRBracket)) {
      error_here("expected at least one extent in " + context);
      return false;
    }
    for (;;) {
      ExprPtr e = expr();
      if (!e) return false;
      out.push_back(std::move(e));
      if (accept(Tok::kComma)) continue;
      return expect(Tok::kRBracket, ("to close " + context).c_str());
    }
  }

  // ------------------------------------------------------------- statements
  std::vector<StmtPtr> block() {
    std::vector<StmtPtr> body;
    DepthGuard guard(*this);
    const Span open = cur().span;
    advance();  // '{'
    if (!guard.ok()) {
      // Skip the whole block, braces balanced, so the enclosing blocks stay in step.
      for (int depth = 1; depth > 0 && !at(Tok::kEof); advance()) {
        if (at(Tok::kLBrace)) ++depth;
        if (at(Tok::kRBrace)) --depth;
      }
      return body;
    }
    while (!at(Tok::kRBrace)) {
      if (at(Tok::kEof)) {
        diags_.error(cur().span, "expected '}' to close the block, found end of file");
        diags_.note(open, "the block opened here");
        return body;
      }
      if (at(Tok::kKernel) || at(Tok::kChip) || at(Tok::kHost) || at(Tok::kImport)) {
        diags_.error(cur().span, "expected '}' to close the block before " + found());
        diags_.note(open, "the block opened here");
        return body;
      }
      if (accept(Tok::kSemi)) continue;
      StmtPtr s = stmt();
      if (!s) {
        sync_stmt();
        continue;
      }
      body.push_back(std::move(s));
      if (at(Tok::kSemi) || at(Tok::kRBrace) || at(Tok::kEof) || cur().newline_before) continue;
      error_here("expected ';' or a line break after the statement");
      sync_stmt();
    }
    advance();  // '}'
    return body;
  }

  StmtPtr stmt() {
    auto s = std::make_unique<Stmt>();
    const Span start = cur().span;
    switch (cur().kind) {
      case Tok::kLet:
      case Tok::kConst: {
        s->kind = at(Tok::kLet) ? StmtKind::kLet : StmtKind::kConst;
        const char* what = at(Tok::kLet) ? "'let'" : "'const'";
        advance();
        if (!at(Tok::kIdent)) {
          error_here(std::string("expected a name after ") + what);
          return nullptr;
        }
        s->name = std::string(cur().text);
        s->name_span = advance().span;
        if (!expect(Tok::kAssign, ("after '" + s->name + "'").c_str())) return nullptr;
        if (!(s->value = expr())) return nullptr;
        break;
      }
      case Tok::kFor: {
        s->kind = StmtKind::kFor;
        advance();
        if (!at(Tok::kIdent)) {
          error_here("expected the loop variable after 'for'");
          return nullptr;
        }
        s->name = std::string(cur().text);
        s->name_span = advance().span;
        if (!expect(Tok::kIn, "after the loop variable")) return nullptr;
        if (!(s->lo = expr())) return nullptr;
        if (!expect(Tok::kDotDot, "in the loop range 'lo .. hi'")) return nullptr;
        if (!(s->hi = expr())) return nullptr;
        if (at_word("step")) {
          advance();
          if (!(s->step = expr())) return nullptr;
        }
        if (!at(Tok::kLBrace)) {
          error_here("expected '{' to open the loop body");
          return nullptr;
        }
        s->body = block();
        break;
      }
      case Tok::kIf:
        return if_stmt();
      case Tok::kIdent:
        if (peek(1).kind == Tok::kAssign) {
          s->kind = StmtKind::kAssign;
          s->name = std::string(cur().text);
          s->name_span = advance().span;
          advance();  // '='
          if (!(s->value = expr())) return nullptr;
          break;
        }
        [[fallthrough]];
      default: {
        s->kind = StmtKind::kCall;
        if (!at(Tok::kIdent)) {
          error_here("expected a statement");
          return nullptr;
        }
        if (!(s->value = expr())) return nullptr;
        if (s->value->kind != ExprKind::kCall) {
          diags_.error(s->value->span,
                       "this expression does nothing; only calls can stand alone as statements");
          return nullptr;
        }
        // `on` must share the call's line, so a next statement naming a variable `on` is safe.
        if (at_word("on") && !cur().newline_before) {
          advance();
          if (!(s->on = expr())) return nullptr;
        }
        break;
      }
    }
    s->span = start.to(prev_span());
    return s;
  }

  StmtPtr if_stmt() {
    DepthGuard guard(*this);
    if (!guard.ok()) return nullptr;
    auto s = std::make_unique<Stmt>();
    s->kind = StmtKind::kIf;
    const Span start = advance().span;  // 'if'
    if (!(s->value = expr())) return nullptr;
    if (!at(Tok::kLBrace)) {
      error_here("expected '{' after the condition");
      return nullptr;
    }
    s->body = block();
    if (accept(Tok::kElse)) {
      if (at(Tok::kIf)) {
        StmtPtr nested = if_stmt();
        if (!nested) return nullptr;
        s->else_body.push_back(std::move(nested));
      } else if (at(Tok::kLBrace)) {
        s->else_body = block();
      } else {
        error_here("expected '{' or 'if' after 'else'");
        return nullptr;
      }
    }
    s->span = start.to(prev_span());
    return s;
  }

  // ------------------------------------------------------------- expressions
  ExprPtr make(ExprKind kind, Span span) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->span = span;
    return e;
  }

  ExprPtr binary(ExprPtr lhs, Tok op, ExprPtr rhs) {
    auto e = make(ExprKind::kBinary, lhs->span.to(rhs->span));
    e->op = op;
    e->args.push_back(std::move(lhs));
    e->args.push_back(std::move(rhs));
    return e;
  }

  ExprPtr expr() {
    DepthGuard guard(*this);
    if (!guard.ok()) return nullptr;
    return or_expr();
  }

  // One left-associative precedence level over `next`.
  template <class Next>
  ExprPtr level(Next next, std::initializer_list<Tok> ops) {
    ExprPtr lhs = (this->*next)();
    if (!lhs) return nullptr;
    for (;;) {
      Tok op = Tok::kEof;
      for (Tok o : ops)
        if (at(o)) op = o;
      if (op == Tok::kEof) return lhs;
      advance();
      ExprPtr rhs = (this->*next)();
      if (!rhs) return nullptr;
      lhs = binary(std::move(lhs), op, std::move(rhs));
    }
  }
  ExprPtr or_expr() { return level(&Parser::and_expr, {Tok::kOrOr}); }
  ExprPtr and_expr() { return level(&Parser::cmp_expr, {Tok::kAndAnd}); }
  ExprPtr cmp_expr() {
    return level(&Parser::add_expr, {Tok::kEq, Tok::kNe, Tok::kLt, Tok::kLe, Tok::kGt, Tok::kGe});
  }
  ExprPtr add_expr() { return level(&Parser::mul_expr, {Tok::kPlus, Tok::kMinus}); }
  ExprPtr mul_expr() {
    return level(&Parser::unary_expr, {Tok::kStar, Tok::kSlash, Tok::kPercent});
  }

  ExprPtr unary_expr() {
    if (at(Tok::kMinus) || at(Tok::kBang)) {
      DepthGuard guard(*this);
      if (!guard.ok()) return nullptr;
      const Token& t = advance();
      ExprPtr x = unary_expr();
      if (!x) return nullptr;
      auto e = make(ExprKind::kUnary, t.span.to(x->span));
      e->op = t.kind;
      e->args.push_back(std::move(x));
      return e;
    }
    return postfix_expr();
  }

  ExprPtr postfix_expr() {
    ExprPtr e = primary();
    if (!e) return nullptr;
    // An index must start on the same line, so "[...]" on a new line is never glued on.
    while (at(Tok::kLBracket) && !cur().newline_before) {
      advance();
      ExprPtr index = expr();
      if (!index) return nullptr;
      if (!expect(Tok::kRBracket, "to close the index")) return nullptr;
      auto ix = make(ExprKind::kIndex, e->span.to(prev_span()));
      ix->args.push_back(std::move(e));
      ix->args.push_back(std::move(index));
      e = std::move(ix);
    }
    return e;
  }

  // Comma-separated expressions up to `close` (consumed); a trailing comma is fine.
  bool list_until(Tok close, std::vector<ExprPtr>& out, const char* what) {
    while (!at(close)) {
      ExprPtr e = expr();
      if (!e) return false;
      out.push_back(std::move(e));
      if (!accept(Tok::kComma)) break;
    }
    return expect(close, what);
  }

  ExprPtr primary() {
    const Token& t = cur();
    switch (t.kind) {
      case Tok::kInt: {
        auto e = make(ExprKind::kInt, t.span);
        e->int_value = t.int_value;
        advance();
        return e;
      }
      case Tok::kFloat: {
        auto e = make(ExprKind::kFloat, t.span);
        e->float_value = t.float_value;
        advance();
        return e;
      }
      case Tok::kTrue:
      case Tok::kFalse: {
        auto e = make(ExprKind::kBool, t.span);
        e->bool_value = t.kind == Tok::kTrue;
        advance();
        return e;
      }
      case Tok::kIdent: {
        const Token& name = advance();
        if (at(Tok::kLParen)) {
          auto e = make(ExprKind::kCall, name.span);
          e->name = std::string(name.text);
          e->name_span = name.span;
          advance();
          if (!list_until(Tok::kRParen, e->args, "to close the argument list")) return nullptr;
          e->span = name.span.to(prev_span());
          return e;
        }
        auto e = make(ExprKind::kName, name.span);
        e->name = std::string(name.text);
        e->name_span = name.span;
        return e;
      }
      case Tok::kLParen: {
        advance();
        ExprPtr e = expr();
        if (!e) return nullptr;
        if (!expect(Tok::kRParen, "to close the parenthesis")) return nullptr;
        return e;
      }
      case Tok::kLBracket: {
        auto e = make(ExprKind::kList, t.span);
        advance();
        if (!list_until(Tok::kRBracket, e->args, "to close the list")) return nullptr;
        e->span = e->span.to(prev_span());
        return e;
      }
      case Tok::kDType: {
        const Token& d = advance();
        const DType dtype = parse_dtype(d.text).value_or(DType::kF32);
        if (at(Tok::kLBracket) && !cur().newline_before) {
          auto e = make(ExprKind::kTypeLit, d.span);
          e->dtype = dtype;
          advance();
          if (!extents(e->args, "the type")) return nullptr;
          e->span = d.span.to(prev_span());
          return e;
        }
        auto e = make(ExprKind::kDType, d.span);
        e->dtype = dtype;
        return e;
      }
      default:
        error_here("expected an expression");
        return nullptr;
    }
  }

  const std::vector<Token>& toks_;
  DiagnosticEngine& diags_;
  Module module_;
  size_t pos_ = 0;
  int depth_ = 0;
  bool reported_depth_ = false;
};

}  // namespace

Module parse(const std::vector<Token>& tokens, int32_t file_id, DiagnosticEngine& diags) {
  if (tokens.empty()) {
    Module m;
    m.file = file_id;
    return m;
  }
  return Parser(tokens, file_id, diags).run();
}

Module parse_file(const SourceManager& sources, int32_t file_id, DiagnosticEngine& diags) {
  const std::vector<Token> tokens = lex(sources.file(file_id), file_id, diags);
  return parse(tokens, file_id, diags);
}

}  // namespace pypto::compiler
