# The reference Perl framework apps (apps/perl/frameworks) under Plack::Test, over a
# database made as a cell's setup makes it: TechEmpower's rules for `queries` (1 where
# missing or not a number, clamped to 1..500), rows as JSON, fortunes escaped.
use strict;
use warnings;
use utf8;
use Test::More;
use Plack::Test;
use Plack::Util;
use HTTP::Request::Common;
use JSON::PP;
use File::Temp qw(tempdir);
use FindBin;

# Each module with the Debian package of envs/apt.txt that installs it; all the missing ones
# are named at once (tests/test_apps.py fails on this skip under make test).
my %package = (Dancer2 => 'libdancer2-perl', Mojolicious => 'libmojolicious-perl', 'DBD::SQLite' => 'libdbd-sqlite3-perl');
my @absent = grep { !eval "require $_; 1" } sort keys %package;
plan skip_all => 'needs ' . join(', ', map {"$_ ($package{$_})"} @absent) . ' (envs/apt.txt, scripts/install)' if @absent;
my $root = "$FindBin::Bin/../..";
my $dir = tempdir(CLEANUP => 1);
$ENV{SERVERBENCH_DATABASE} = "$dir/world.sqlite";
system('python3', "$root/apps/data/make_world.py", $ENV{SERVERBENCH_DATABASE}) == 0 or die "make_world.py failed";

for my $psgi (qw(dancer2_world.psgi mojo_world.psgi)) {
    my $test = Plack::Test->create(Plack::Util::load_psgi("$root/apps/perl/frameworks/$psgi"));
    my $get = sub { $test->request(GET $_[0]) };
    is $get->('/plaintext')->content, 'Hello, World!', "$psgi plaintext";
    is_deeply decode_json($get->('/json')->content), {message => 'Hello, World!'}, "$psgi json";
    my $row = decode_json($get->('/db')->content);
    ok $row->{id} >= 1 && $row->{id} <= 10_000 && $row->{randomNumber} >= 1, "$psgi db: one row";
    my %counts = ('queries=20' => 20, 'queries=0' => 1, 'queries=1000' => 500, 'queries=x' => 1, '' => 1);
    for my $query (sort keys %counts) {
        my $rows = decode_json($get->("/queries?$query")->content);
        is scalar(@$rows), $counts{$query}, "$psgi queries?$query: $counts{$query} rows";
    }
    my $page = $get->('/fortunes');
    like $page->header('Content-Type'), qr{^text/html}, "$psgi fortunes is HTML";
    like $page->content, qr{&lt;script&gt;}, "$psgi fortunes escaped";
    unlike $page->content, qr{<script>}, "$psgi fortunes without a live script";
    like $page->decoded_content, qr{フレームワークのベンチマーク}, "$psgi fortunes in UTF-8";
}

done_testing;
