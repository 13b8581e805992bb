'use strict';
const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const { performance } = require('node:perf_hooks');
const { HttpError } = require('../../lib/errors.js');
const { MB, fill, grow } = require('../helpers');
const { parseXml, MAX_XML_DEPTH, MAX_XML_ATTRIBUTES, MAX_XML_NAMESPACES, MAX_XML_NODES } = require('../../lib/xml/xml.js');

/** The HttpError parseXml throws for `text` (fails the test when it parses). */
function rejection(text) {
  try {
    parseXml(text);
  } catch (err) {
    return err;
  }
  assert.fail(`parsed: ${JSON.stringify(text.slice(0, 60))}`);
}

/** Asserts a 400 at `line`, `column` whose reason matches `reason`. */
function assertInvalid(text, line, column, reason) {
  const err = rejection(text);
  assert.ok(err instanceof HttpError, `${err}`);
  assert.equal(err.statusCode, 400);
  assert.equal(err.message.slice(0, err.message.indexOf(': ')), `invalid XML at line ${line}, column ${column}`, JSON.stringify(text));
  assert.deepEqual(err.details, { line, column });
  assert.match(err.message.slice(err.message.indexOf(': ') + 2), reason);
  return err;
}

describe('parseXml: well-formed XML', () => {
  it('gives a Document with namespaces, CDATA, comments, processing instructions and entities', () => {
    const doc = parseXml(
      '<?xml version="1.0" encoding="UTF-8"?>\n<!-- before -->\n' +
        '<o:order xmlns:o="urn:orders" xmlns="urn:default" id="&#65;1">' +
        '<item>tea &amp; cake &lt;3 &gt; &quot;&apos; &#x41;&#65;</item>' +
        '<![CDATA[<raw> & ]]><!-- inside --><?audit by="me"?>' +
        '</o:order>',
    );
    const root = doc.documentElement;
    assert.equal(root.nodeName, 'o:order');
    assert.equal(root.localName, 'order');
    assert.equal(root.namespaceURI, 'urn:orders');
    assert.equal(root.getAttribute('id'), 'A1');
    const item = root.getElementsByTagName('item')[0];
    assert.equal(item.namespaceURI, 'urn:default');
    assert.equal(item.textContent, 'tea & cake <3 > "\' AA');
    const kinds = Array.from(root.childNodes, (node) => node.nodeType);
    assert.deepEqual(kinds, [1, 4, 8, 7]); // element, CDATA section, comment, processing instruction
    assert.equal(root.childNodes[1].data, '<raw> & ');
    assert.equal(root.childNodes[2].data, ' inside ');
    assert.equal(root.childNodes[3].target, 'audit');
    assert.equal(doc.firstChild.nodeType, 7); // the XML declaration
  });

  it('a DOCTYPE with only an external identifier, a byte order mark and misc after the root are accepted', () => {
    const doc = parseXml('\ufeff<!DOCTYPE note SYSTEM "note.dtd">\n<note/>\n<!-- end --><?done?>\n');
    assert.equal(doc.documentElement.nodeName, 'note');
    assert.equal(doc.doctype.name, 'note');
    assert.match(doc.doctype.systemId, /note\.dtd/); // xmldom keeps the quotes
  });

  it('characters beyond U+FFFF, written or as references, are kept; names may use them too', () => {
    const doc = parseXml('<a>\u{1F600}&#x1F600;&#128512;<é-名·x.1 \u{10000}="v"/></a>');
    assert.equal(doc.documentElement.firstChild.data, '\u{1F600}'.repeat(3));
    assert.equal(doc.documentElement.lastChild.getAttribute('\u{10000}'), 'v');
  });

  it('CR LF and lone CR line ends become LF; line numbers count them', () => {
    const doc = parseXml('<a>1\r\n2\r3</a>');
    assert.equal(doc.documentElement.textContent, '1\n2\n3');
    assertInvalid('<a>\r\n<b>\r</a>', 3, 1, /end tag <\/a> does not match <b>/);
  });

  it(`elements nested ${MAX_XML_DEPTH} deep, ${MAX_XML_ATTRIBUTES} attributes and ${MAX_XML_NAMESPACES} namespaces in scope parse`, () => {
    const deep = parseXml('<a>'.repeat(MAX_XML_DEPTH) + '</a>'.repeat(MAX_XML_DEPTH));
    assert.equal(deep.documentElement.nodeName, 'a');
    const attributes = Array.from({ length: MAX_XML_ATTRIBUTES }, (_, n) => ` b${n}="${n}"`).join('');
    assert.equal(parseXml(`<a${attributes}/>`).documentElement.attributes.length, MAX_XML_ATTRIBUTES);
    const half = MAX_XML_NAMESPACES / 2;
    const ns = (from) => Array.from({ length: half }, (_, n) => ` xmlns:p${from + n}="urn:${from + n}"`).join('');
    const doc = parseXml(`<a${ns(0)}><p0:b${ns(half)}><p${MAX_XML_NAMESPACES - 1}:c/></p0:b><a${ns(0)}/></a>`);
    assert.equal(doc.getElementsByTagName(`p${MAX_XML_NAMESPACES - 1}:c`)[0].namespaceURI, `urn:${MAX_XML_NAMESPACES - 1}`);
  });
});

describe('parseXml: XML that is not well-formed is a 400 saying line and column', () => {
  const cases = [
    ['<a>&</a>', 1, 4, /'&' that starts no entity/],
    ['<a>AT&T</a>', 1, 6, /entity reference &T not ended by ';'/],
    ['<a>&nbsp;</a>', 1, 4, /undefined entity &nbsp;/],
    ['<a>&#1;</a>', 1, 4, /U\+0001, which XML does not allow/],
    ['<a>&#xFFFE;</a>', 1, 4, /U\+FFFE, which XML does not allow/],
    ['<a>&#xD800;</a>', 1, 4, /U\+D800, which XML does not allow/],
    ['<a b="&#x110000;"/>', 1, 7, /past U\+10FFFF/],
    ['<a>&#99999999999999999999999;</a>', 1, 4, /past U\+10FFFF/],
    ['<a>&#X41;</a>', 1, 4, /malformed character reference/],
    ['<a>\n\u0001</a>', 2, 1, /character U\+0001 is not allowed/],
    ['<a>\ud800x</a>', 1, 4, /unpaired surrogate U\+D800/],
    ['<a>\uffff</a>', 1, 4, /character U\+FFFF is not allowed/],
    ['<order>\n  <item>tea</order>', 2, 12, /end tag <\/order> does not match <item>/],
    ['<a></a></b>', 1, 8, /end tag <\/b> without a start tag/],
    ['<a>', 1, 4, /element <a> is not closed/],
    ['<a/><b/>', 1, 5, /a second root element/],
    ['<a/>\ntext', 2, 1, /text after the root element/],
    ['just words', 1, 1, /text before the root element/],
    ['', 1, 1, /no root element/],
    ['<a>]]></a>', 1, 4, /']]>' in text/],
    ['<!-- a -- b --><a/>', 1, 8, /'--' inside a comment/],
    ['<a b=c/>', 1, 6, /attribute value not in quotes/],
    ['<a b/>', 1, 4, /attribute b has no '='/],
    ['<a b="1"c="2"/>', 1, 9, /separated by white space/],
    ['<a b="<"/>', 1, 7, /'<' in an attribute value/],
    ['<a>< b/></a>', 1, 4, /'<' followed by character U\+0020, not a name/],
    ['<![CDATA[x]]><a/>', 1, 1, /CDATA section outside the root element/],
    ['<a/><?xml version="1.0"?>', 1, 5, /XML declaration not at the start/],
    ['<!ELEMENT a ANY><a/>', 1, 1, /'<!' that starts no comment/],
    // Found by xmldom after the scan: its first error stops it, with its position.
    ['<a>\n  <b c="1" c="2"/></a>', 2, 3, /Attribute c redefined/],
    ['<a>\n  <p:b/></a>', 2, 3, /NamespaceError/],
    ['<?xml version="one"?><a/>', 1, 1, /xml declaration is not well-formed/],
  ];
  for (const [text, line, column, reason] of cases) {
    it(`${JSON.stringify(text)}: line ${line}, column ${column}, ${reason.source}`, () => {
      assertInvalid(text, line, column, reason);
    });
  }

  it('a DOCTYPE with an internal subset is refused, so no entity is ever declared or expanded', () => {
    const lol = Array.from({ length: 9 }, (_, n) => `<!ENTITY lol${n + 1} "${`&lol${n || ''};`.repeat(10)}">`).join('');
    const laughs = `<?xml version="1.0"?>\n<!DOCTYPE lolz [<!ENTITY lol "lol">${lol}]>\n<lolz>&lol9;</lolz>`;
    assertInvalid(laughs, 2, 16, /DOCTYPE internal subset is not accepted/);
    assertInvalid('<!DOCTYPE a [<!ATTLIST a b CDATA "x">]><a/>', 1, 13, /DOCTYPE internal subset is not accepted/);
    // A '[' inside a quoted system identifier is no internal subset.
    assert.match(parseXml('<!DOCTYPE a SYSTEM "x[1].dtd"><a/>').doctype.systemId, /x\[1\]\.dtd/);
  });

  it('each bound is a 400 that names it', () => {
    assertInvalid('<a>'.repeat(MAX_XML_DEPTH + 1), 1, 3 * MAX_XML_DEPTH + 1, new RegExp(`^nesting deeper than ${MAX_XML_DEPTH} elements$`));
    const attributes = Array.from({ length: MAX_XML_ATTRIBUTES + 1 }, (_, n) => ` b${n}=""`).join('');
    assertInvalid(
      `<a${attributes}/>`,
      1,
      '<a'.length + attributes.lastIndexOf('b') + 1,
      new RegExp(`^more than ${MAX_XML_ATTRIBUTES} attributes on one element$`),
    );
    const nested = grow((n) => `<a xmlns:p${n}="u">`, 10_000);
    assertInvalid(
      nested,
      1,
      nested.indexOf(`xmlns:p${MAX_XML_NAMESPACES}=`) + 1,
      new RegExp(`^more than ${MAX_XML_NAMESPACES} namespace declarations in scope$`),
    );
    const many = '<r>' + '<x/>'.repeat(MAX_XML_NODES) + '</r>';
    assertInvalid(many, 1, many.length - 7, new RegExp(`^more than ${MAX_XML_NODES} elements, attributes, comments and other nodes$`));
  });

  it('messages quote at most a few dozen characters of the input', () => {
    const long = 'n'.repeat(10_000);
    const errors = [
      rejection(`<${long}>`),
      rejection(`<a>&${long};</a>`),
      rejection(`<a ${long}/>`),
      rejection(`<${long} b="1" b="2"/>`), // from xmldom, which quotes the whole name
      rejection(`<${long} ${long}="1" ${long}="2"/>`),
    ];
    for (const err of errors) {
      assert.equal(err.statusCode, 400);
      assert.ok(err.message.length < 200, err.message);
      assert.doesNotMatch(err.message, /n{41}/);
    }
  });
});

describe('parseXml: hostile 1 MB inputs are refused (or parsed) in well under a second', () => {
  const hostile = {
    'nested namespace declarations': () => grow((n) => `<a xmlns:p${n}="u">`),
    'nested namespace declarations, closed': () => {
      const open = grow((n) => `<a xmlns:p${n}="u">`, 0.84 * MB);
      return open + '</a>'.repeat(open.split('<a').length - 1);
    },
    'all <': () => fill('<'),
    'all <a>': () => fill('<a>'),
    'deep nesting <a><a>...</a></a>': () => fill('<a>', MB / 2) + fill('</a>', (MB / 2) * (4 / 3)),
    'many attributes <a b1="" b2="" ...>': () => '<a' + grow((n) => ` b${n}=""`) + '>',
    'many namespace declarations on one element': () => '<a' + grow((n) => ` xmlns:p${n}="u"`) + '/>',
    'a long run of &': () => '<a>' + fill('&') + '</a>',
    'a long run of &#1;': () => '<a>' + fill('&#1;') + '</a>',
    'a long run of &x without ;': () => '<a>' + fill('&x') + '</a>',
    'a comment never closed': () => '<a><!--' + fill('x'),
    'a CDATA section never closed': () => '<a><![CDATA[' + fill('x'),
    'a processing instruction never closed': () => '<a><?pi ' + fill('x'),
    'an attribute value never closed': () => '<a b="' + fill('x'),
    '<!ENTITY lol-style declarations in an internal subset': () =>
      '<!DOCTYPE lolz [<!ENTITY lol "lol">' + grow((n) => `<!ENTITY lol${n + 1} "${`&lol${n || ''};`.repeat(10)}">`) + ']><lolz>&lol9;</lolz>',
    'mismatched end tags': () => '<a>' + fill('</b>'),
    'one huge tag name, never closed': () => '<' + fill('a'),
    'comments before the root': () => fill('<!---->') + '<a/>',
    'more nodes than the budget': () => '<r>' + fill('<x/>') + '</r>',
  };
  for (const [title, make] of Object.entries(hostile)) {
    it(`${title}: a short 400`, () => {
      const text = make();
      assert.ok(text.length >= MB, `${text.length}`);
      const started = performance.now();
      const err = rejection(text);
      const took = performance.now() - started;
      assert.ok(err instanceof HttpError, `${err}`);
      assert.equal(err.statusCode, 400);
      assert.ok(err.message.length < 300, `${err.message.length} characters`);
      assert.match(err.message, /^invalid XML at line \d+, column \d+: /);
      assert.ok(took < 1000, `${Math.round(took)} ms`);
    });
  }

  it('a giant attribute value parses', () => {
    const value = fill('x');
    const started = performance.now();
    const doc = parseXml(`<a b="${value}"/>`);
    const took = performance.now() - started;
    assert.equal(doc.documentElement.getAttribute('b').length, value.length);
    assert.ok(took < 1000, `${Math.round(took)} ms`);
  });

  it('1 MB of text with entity and character references parses', () => {
    const started = performance.now();
    const doc = parseXml('<r>' + fill('&amp;&lt;&#x41;&#65; ') + '</r>');
    const took = performance.now() - started;
    assert.ok(doc.documentElement.textContent.startsWith('&<AA &<AA '));
    assert.ok(took < 1000, `${Math.round(took)} ms`);
  });
});
