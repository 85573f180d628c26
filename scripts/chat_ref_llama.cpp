// chat_ref_llama.cpp - reference outputs of llama.cpp's built-in chat
// formats, for tests/data/chat_ref (run by scripts/gen_chat_ref.py, which
// compiles this against an already-built libllama; nothing here builds
// llama.cpp).
//
//   chat_ref_llama CONVS DETECT_IN BUILTIN_OUT DETECT_OUT
//
// CONVS and DETECT_IN are record files (see tests/data/chat_ref/README.md):
// "@KIND key=value ... len=N\n" then N bytes then "\n". For every format in
// llama_chat_builtin_templates(), every conversation and add_ass 0/1 it
// writes llama_chat_apply_template's text to BUILTIN_OUT; for every template
// text in DETECT_IN it writes the format llm_chat_detect_template picks.
// That function is internal to libllama but exported; it is declared here
// with its C++ signature (the enum is only ever compared by value, mapped
// to a name through llm_chat_template_from_str, which is exported too).
#include "llama.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

enum llm_chat_template { LLM_CHAT_TEMPLATE_ANY_ = 0 };
llm_chat_template llm_chat_detect_template(const std::string &tmpl);
llm_chat_template llm_chat_template_from_str(const std::string &name);

struct rec {
	std::string kind;
	std::map<std::string, std::string> kv;
	std::string body;
};

static std::vector<rec> read_records(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		perror(path);
		exit(1);
	}
	std::string all;
	char buf[65536];
	size_t n;
	while ((n = fread(buf, 1, sizeof buf, f)) > 0)
		all.append(buf, n);
	fclose(f);
	std::vector<rec> out;
	size_t pos = 0;
	while (pos < all.size()) {
		size_t nl = all.find('\n', pos);
		if (all[pos] != '@' || nl == std::string::npos) {
			fprintf(stderr, "%s: bad record at %zu\n", path, pos);
			exit(1);
		}
		std::string head = all.substr(pos + 1, nl - pos - 1);
		rec r;
		size_t sp = head.find(' ');
		r.kind = head.substr(0, sp);
		while (sp != std::string::npos) {
			size_t next = head.find(' ', sp + 1);
			std::string tok = head.substr(sp + 1, next == std::string::npos ? std::string::npos : next - sp - 1);
			size_t eq = tok.find('=');
			r.kv[tok.substr(0, eq)] = tok.substr(eq + 1);
			sp = next;
		}
		size_t len = strtoull(r.kv["len"].c_str(), nullptr, 10);
		r.body = all.substr(nl + 1, len);
		pos = nl + 1 + len + 1;
		out.push_back(r);
	}
	return out;
}

static void write_record(FILE *f, const std::string &head, const std::string &body)
{
	fprintf(f, "@%s len=%zu\n", head.c_str(), body.size());
	fwrite(body.data(), 1, body.size(), f);
	fputc('\n', f);
}

int main(int argc, char **argv)
{
	if (argc != 5) {
		fprintf(stderr, "usage: %s CONVS DETECT_IN BUILTIN_OUT DETECT_OUT\n", argv[0]);
		return 2;
	}
	std::vector<rec> convs_in = read_records(argv[1]);
	// conversations: "@conv name=X n=K" followed by K "@msg role=R" records
	std::vector<std::pair<std::string, std::vector<llama_chat_message>>> convs;
	std::vector<rec> keep = convs_in; // owns the strings the messages point at
	for (size_t i = 0; i < keep.size(); i++) {
		if (keep[i].kind == "conv")
			convs.push_back({keep[i].kv["name"], {}});
		else if (keep[i].kind == "msg")
			convs.back().second.push_back({keep[i].kv["role"].c_str(), keep[i].body.c_str()});
	}

	int32_t nt = llama_chat_builtin_templates(nullptr, 0);
	std::vector<const char *> names(nt);
	llama_chat_builtin_templates(names.data(), names.size());
	std::map<int, std::string> by_value;
	// (name, what to pass as llama_chat_apply_template's tmpl)
	std::vector<std::pair<std::string, std::string>> fmts;
	for (const char *nm : names) {
		by_value[(int)llm_chat_template_from_str(nm)] = nm;
		fmts.push_back({nm, nm});
	}
	// dots1 has a formatter and is detected, but LLM_CHAT_TEMPLATES gives
	// it no name: reach it through its marker (tern calls it "dots1").
	const char *dots1_marker = "<|endofuserprompt|>";
	if (!by_value.count((int)llm_chat_detect_template(dots1_marker))) {
		by_value[(int)llm_chat_detect_template(dots1_marker)] = "dots1";
		fmts.push_back({"dots1", dots1_marker});
	}

	FILE *fb = fopen(argv[3], "wb");
	for (auto &fm : fmts) {
		const char *nm = fm.second.c_str();
		for (auto &c : convs) {
			for (int ass = 0; ass <= 1; ass++) {
				std::vector<char> buf(4096);
				int32_t r = llama_chat_apply_template(nm, c.second.data(), c.second.size(), ass,
								      buf.data(), (int32_t)buf.size());
				if (r > (int32_t)buf.size()) {
					buf.resize(r);
					r = llama_chat_apply_template(nm, c.second.data(), c.second.size(), ass,
								      buf.data(), (int32_t)buf.size());
				}
				if (r < 0) {
					fprintf(stderr, "%s: llama_chat_apply_template failed\n", fm.first.c_str());
					return 1;
				}
				write_record(fb, "out fmt=" + fm.first + " conv=" + c.first + " ag=" +
							 std::to_string(ass),
					     std::string(buf.data(), r));
			}
		}
	}
	fclose(fb);

	std::vector<rec> det = read_records(argv[2]);
	FILE *fd = fopen(argv[4], "wb");
	for (auto &r : det) {
		int v = (int)llm_chat_detect_template(r.body);
		auto it = by_value.find(v);
		std::string name = it == by_value.end() ? "unknown" : it->second;
		bool embed = r.kv["embed"] == "1";
		write_record(fd, "detect src=" + r.kv["src"] + " expect=" + name, embed ? r.body : std::string());
	}
	fclose(fd);
	return 0;
}
